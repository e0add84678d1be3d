package backfill_platform.functions;

import java.io.IOException;
import java.io.InputStream;
import java.util.zip.CRC32;
import java.util.zip.DataFormatException;
import java.util.zip.Inflater;

/**
 * The content of a gzip file, member after member, read as strictly as Python's {@code gzip} module reads it,
 * or stricter: whatever Python would refuse, or might read differently, stops the read with {@link NotPlain}.
 *
 * <p>Not {@code java.util.zip.GZIPInputStream}: it ends silently at bytes after a member that are not another
 * member, where Python's reader fails (and the platform quarantines the file as {@code unreadable_file}).
 * Here a member's header is checked (method 8, no reserved flag), its trailer too (CRC-32 and length), and
 * after a member only zero padding, another member or the end of the file may follow, as in Python.
 */
final class GzipMembers extends InputStream {
  private static final int FHCRC = 2;
  private static final int FEXTRA = 4;
  private static final int FNAME = 8;
  private static final int FCOMMENT = 16;
  private static final int RESERVED = 0xE0;

  private final InputStream in;
  private final byte[] input = new byte[1 << 16];
  private int position;
  private int limit;
  private final Inflater inflater = new Inflater(true);
  private final CRC32 crc = new CRC32();
  private long memberBytes;
  private boolean ended;

  /** Reads the first member's header from {@code in}, which starts with gzip's magic bytes. */
  GzipMembers(InputStream in) throws IOException {
    this.in = in;
    try {
      header();
    } catch (IOException | RuntimeException error) {
      inflater.end();
      throw error;
    }
  }

  @Override
  public int read() throws IOException {
    byte[] one = new byte[1];
    return read(one, 0, 1) == -1 ? -1 : one[0] & 0xFF;
  }

  @Override
  public int read(byte[] buffer, int offset, int length) throws IOException {
    if (length == 0) {
      return 0;
    }
    while (!ended) {
      if (inflater.needsInput()) {
        if (position == limit && !fill()) {
          throw new NotPlain("the gzip stream ends inside a member");
        }
        inflater.setInput(input, position, limit - position);
        position = limit;
      }
      int produced;
      try {
        produced = inflater.inflate(buffer, offset, length);
      } catch (DataFormatException error) {
        throw new NotPlain("gzip data: " + error.getMessage());
      }
      if (produced > 0) {
        crc.update(buffer, offset, produced);
        memberBytes += produced;
        return produced;
      }
      if (inflater.finished()) {
        position = limit - inflater.getRemaining();
        endOfMember();
      } else if (inflater.needsDictionary()) {
        throw new NotPlain("a gzip member needs a preset dictionary");
      }
    }
    return -1;
  }

  @Override
  public void close() throws IOException {
    inflater.end();
    in.close();
  }

  /** The trailer of the member just inflated, then what follows it: zeros, the end, or another member. */
  private void endOfMember() throws IOException {
    long expectedCrc = littleEndian(4);
    long expectedSize = littleEndian(4);
    if (expectedCrc != crc.getValue() || expectedSize != (memberBytes & 0xFFFFFFFFL)) {
      throw new NotPlain("a gzip member's CRC or length does not match its data");
    }
    int next = nextByte();
    while (next == 0) { // Python's reader skips zero padding after a member
      next = nextByte();
    }
    if (next == -1) {
      ended = true;
      return;
    }
    position--; // the byte read is the next member's first
    inflater.reset();
    crc.reset();
    memberBytes = 0;
    header();
  }

  private void header() throws IOException {
    if (requiredByte() != 0x1F || requiredByte() != 0x8B) {
      throw new NotPlain("bytes after a gzip member that are not another member");
    }
    if (requiredByte() != 8) {
      throw new NotPlain("a gzip member not compressed with deflate");
    }
    int flags = requiredByte();
    if ((flags & RESERVED) != 0) {
      throw new NotPlain("a gzip header with reserved flags");
    }
    for (int i = 0; i < 6; i++) { // modification time, extra flags, operating system
      requiredByte();
    }
    if ((flags & FEXTRA) != 0) {
      long extra = littleEndian(2);
      for (long i = 0; i < extra; i++) {
        requiredByte();
      }
    }
    if ((flags & FNAME) != 0) {
      skipZeroTerminated();
    }
    if ((flags & FCOMMENT) != 0) {
      skipZeroTerminated();
    }
    if ((flags & FHCRC) != 0) {
      littleEndian(2);
    }
  }

  private void skipZeroTerminated() throws IOException {
    while (requiredByte() != 0) {
      // the member's name or comment
    }
  }

  private long littleEndian(int bytes) throws IOException {
    long value = 0;
    for (int i = 0; i < bytes; i++) {
      value |= ((long) requiredByte()) << (8 * i);
    }
    return value;
  }

  private int requiredByte() throws IOException {
    int value = nextByte();
    if (value == -1) {
      throw new NotPlain("the gzip stream ends inside a member's header or trailer");
    }
    return value;
  }

  /** The next raw byte after what the inflater consumed, or -1 at the end of the file. */
  private int nextByte() throws IOException {
    if (position == limit && !fill()) {
      return -1;
    }
    return input[position++] & 0xFF;
  }

  private boolean fill() throws IOException {
    int read = in.read(input, 0, input.length);
    while (read == 0) {
      read = in.read(input, 0, input.length);
    }
    position = 0;
    limit = Math.max(read, 0);
    return read > 0;
  }
}
