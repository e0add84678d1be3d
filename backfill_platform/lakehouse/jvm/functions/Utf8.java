package backfill_platform.functions;

/**
 * Well-formed UTF-8, byte for byte as the Unicode standard defines it (its table 3-7) and as Python's strict
 * decoder accepts it: no overlong forms, no encoded surrogates, nothing above U+10FFFF.
 */
final class Utf8 {
  private Utf8() {}

  /** The index of the first byte of the first ill-formed sequence in {@code bytes[from, to)}, or -1. */
  static int firstInvalid(byte[] bytes, int from, int to) {
    int i = from;
    while (i < to) {
      int lead = bytes[i] & 0xFF;
      if (lead < 0x80) {
        i++;
        continue;
      }
      int length;
      int low = 0x80;
      int high = 0xBF;
      if (lead >= 0xC2 && lead <= 0xDF) {
        length = 2;
      } else if (lead >= 0xE0 && lead <= 0xEF) {
        length = 3;
        if (lead == 0xE0) {
          low = 0xA0;
        } else if (lead == 0xED) {
          high = 0x9F;
        }
      } else if (lead >= 0xF0 && lead <= 0xF4) {
        length = 4;
        if (lead == 0xF0) {
          low = 0x90;
        } else if (lead == 0xF4) {
          high = 0x8F;
        }
      } else {
        return i;
      }
      if (i + length > to) {
        return i;
      }
      int second = bytes[i + 1] & 0xFF;
      if (second < low || second > high) {
        return i;
      }
      for (int k = 2; k < length; k++) {
        int next = bytes[i + k] & 0xFF;
        if (next < 0x80 || next > 0xBF) {
          return i;
        }
      }
      i += length;
    }
    return -1;
  }
}
