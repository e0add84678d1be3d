package backfill_platform.functions;

import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.util.Arrays;
import java.util.HashMap;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;
import org.apache.spark.sql.api.java.UDF2;

/**
 * A subject's keyed hash, as the erasure requests store it: the hex HMAC-SHA256 of its UTF-8 text (Python's
 * {@code hmac.new(key, subject, sha256).hexdigest()}); null for a null subject.
 *
 * <p>The events pass hashes every record's subject ({@code pipeline/erasure/subjects.py}). Spark's own
 * {@code sha2} could compute the HMAC too, but looks up a new {@code MessageDigest} for every value and goes
 * through hex text twice: on a day of 1.5 million records that cost about 15% of the events step. Here each
 * task thread keeps one {@code Mac} per key, and the hashes of the subjects it met last: a day's records
 * name far fewer people than they are (1.5 million plays of 20,000 viewers), so most records cost a map
 * lookup, not four SHA-256 compressions (which a driver JVM without its optimizing compiler runs slowly).
 * The cache is bounded ({@code CACHE_ENTRIES}) and emptied when full. The key arrives as a literal argument
 * (the session redacts it from the plans it shows), already reduced to at most one SHA-256 block as HMAC
 * does.
 */
public final class HmacSubject implements UDF2<String, byte[], String> {
  private static final long serialVersionUID = 1L;
  private static final char[] HEX = "0123456789abcdef".toCharArray();
  private static final ThreadLocal<Keyed> MACS = new ThreadLocal<>();

  static final int CACHE_ENTRIES = 1 << 16;

  private static final class Keyed {
    final byte[] key;
    final Mac mac;
    final HashMap<String, String> hashes = new HashMap<>();

    Keyed(byte[] key) throws GeneralSecurityException {
      this.key = key.clone();
      this.mac = Mac.getInstance("HmacSHA256");
      this.mac.init(new SecretKeySpec(key, "HmacSHA256"));
    }
  }

  @Override
  public String call(String subject, byte[] key) throws GeneralSecurityException {
    if (subject == null) {
      return null;
    }
    Keyed keyed = MACS.get();
    if (keyed == null || !Arrays.equals(keyed.key, key)) {
      keyed = new Keyed(key);
      MACS.set(keyed);
    }
    String known = keyed.hashes.get(subject);
    if (known != null) {
      return known;
    }
    byte[] digest = keyed.mac.doFinal(subject.getBytes(StandardCharsets.UTF_8));
    char[] text = new char[digest.length * 2];
    for (int i = 0; i < digest.length; i++) {
      text[2 * i] = HEX[(digest[i] >> 4) & 0xF];
      text[2 * i + 1] = HEX[digest[i] & 0xF];
    }
    String hash = new String(text);
    if (keyed.hashes.size() >= CACHE_ENTRIES) {
      keyed.hashes.clear();
    }
    keyed.hashes.put(subject, hash);
    return hash;
  }
}
