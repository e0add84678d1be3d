package backfill_platform.functions;

import java.io.IOException;

/** A file the JVM's line reader does not read: the Python reader reads it instead, and decides what it holds. */
final class NotPlain extends IOException {
  private static final long serialVersionUID = 1L;

  NotPlain(String reason) {
    super(reason);
  }
}
