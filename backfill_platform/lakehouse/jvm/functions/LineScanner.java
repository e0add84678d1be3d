package backfill_platform.functions;

import java.io.Closeable;
import java.io.IOException;
import java.io.InputStream;
import java.io.PushbackInputStream;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.Arrays;

/**
 * The lines of a plain JSON-lines file, exactly as the Python reader gives them ({@code archive.records.
 * iter_lines}, {@code archive.line_blocks}), or {@link NotPlain} at the first thing it would treat with care.
 *
 * <p>As there: gzip is recognised by its magic bytes, not the name; lines end at LF only; one CR before it is
 * removed (a lone CR elsewhere is text); a final newline does not start a line. A file is plain when it has no
 * byte-order mark at its start, every line is well-formed UTF-8 (exactly what Python's strict decoder accepts)
 * and no line is longer than {@code maxLineBytes} (counting its CR), and its gzip stream, if any, is intact.
 */
final class LineScanner implements Closeable {
  private static final int CHUNK = 1 << 20;

  private final InputStream content;
  private final long maxLineBytes;
  private byte[] buffer;
  private int position;
  private int limit;
  private int scanned; // bytes from `position` already known to hold no LF
  private boolean exhausted;
  private long number;
  private int start;
  private int end;

  private LineScanner(InputStream content, long maxLineBytes, byte[] buffer) {
    this.content = content;
    this.maxLineBytes = maxLineBytes;
    this.buffer = buffer != null && buffer.length >= CHUNK ? buffer : new byte[CHUNK];
  }

  /**
   * The scanner of a local file, gunzipped when it starts with gzip's magic bytes; {@code buffer} (or null)
   * is the {@link #buffer()} of the file scanned before it, reused.
   */
  static LineScanner open(String path, long maxLineBytes, byte[] buffer) throws IOException {
    InputStream raw = Files.newInputStream(Paths.get(path));
    try {
      PushbackInputStream file = new PushbackInputStream(raw, 2);
      byte[] magic = file.readNBytes(2);
      file.unread(magic);
      boolean gzip = magic.length == 2 && magic[0] == (byte) 0x1F && magic[1] == (byte) 0x8B;
      return new LineScanner(gzip ? new GzipMembers(file) : file, maxLineBytes, buffer);
    } catch (IOException | RuntimeException error) {
      raw.close();
      throw error;
    }
  }

  /** Moves to the next line; false at the end of the file. */
  boolean next() throws IOException {
    while (true) {
      int newline = indexOfNewline();
      if (newline >= 0) {
        take(position, newline);
        position = newline + 1;
        return true;
      }
      if (limit - position > maxLineBytes) {
        throw new NotPlain("line " + (number + 1) + " is longer than " + maxLineBytes + " bytes");
      }
      if (exhausted) {
        if (position < limit) {
          take(position, limit);
          position = limit;
          scanned = 0;
          return true;
        }
        return false;
      }
      readMore();
    }
  }

  /** The current line's number, counted from 1. */
  long number() {
    return number;
  }

  /** A copy of the current line's bytes (UTF-8, without its LF or the CR before it). */
  byte[] bytes() {
    return Arrays.copyOfRange(buffer, start, end);
  }

  /** The scanner's buffer for the next file's scanner, once this one is done with it; null when a long line
   * grew it (a buffer of the limit's size is not kept for files that do not need it). */
  byte[] buffer() {
    return buffer.length <= 2 * CHUNK ? buffer : null;
  }

  @Override
  public void close() throws IOException {
    content.close();
  }

  private int indexOfNewline() {
    for (int i = position + scanned; i < limit; i++) {
      if (buffer[i] == '\n') {
        scanned = 0;
        return i;
      }
    }
    scanned = limit - position;
    return -1;
  }

  private void take(int from, int to) throws NotPlain {
    number++;
    if (to - from > maxLineBytes) {
      throw new NotPlain("line " + number + " is longer than " + maxLineBytes + " bytes");
    }
    if (number == 1 && to - from >= 3 && buffer[from] == (byte) 0xEF && buffer[from + 1] == (byte) 0xBB
        && buffer[from + 2] == (byte) 0xBF) {
      throw new NotPlain("a byte-order mark at the start of the file");
    }
    if (to > from && buffer[to - 1] == '\r') {
      to--;
    }
    int bad = Utf8.firstInvalid(buffer, from, to);
    if (bad >= 0) {
      throw new NotPlain("line " + number + " is not UTF-8 at byte " + (bad - from));
    }
    start = from;
    end = to;
  }

  /** Keeps the unread part of the buffer, grown when a line needs it, and reads more of the file after it. */
  private void readMore() throws IOException {
    int pending = limit - position;
    if (pending + CHUNK > buffer.length) { // a line longer than the buffer, within the limit (checked above)
      long wanted = Math.max(2L * buffer.length, (long) pending + CHUNK);
      buffer = Arrays.copyOf(buffer, (int) Math.min(wanted, maxLineBytes + 1 + CHUNK));
    }
    System.arraycopy(buffer, position, buffer, 0, pending);
    position = 0;
    limit = pending;
    int read = content.read(buffer, limit, buffer.length - limit);
    if (read < 0) {
      exhausted = true;
    } else {
      limit += read;
    }
  }
}
