package backfill_platform.functions;

import com.fasterxml.jackson.core.JsonEncoding;
import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.core.StreamReadConstraints;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;
import java.util.Objects;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.api.java.UDF3;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

/**
 * One strict parse of a JSON line: its declared fields, as Spark's {@code from_json} reads them, when the line
 * is exactly one JSON object; otherwise null.
 *
 * <p>The events' parse ({@code pipeline/events/parse.py}) reads each line with Spark's lenient parser and then
 * proves, by two more strict parses ({@code json_shape.one_object}), that the line is one object and nothing
 * else. For the lines that are (nearly all of them), this one streaming parse gives the same struct the
 * lenient parser would and proves the same thing, in one pass instead of three. Whatever it does not
 * settle, it returns null for, and the line takes the lenient path with its reasons, unchanged:
 * text that is not strict JSON (single quotes, {@code NaN}, an unescaped control character or NUL), anything
 * after the object, a declared key given twice, or a value other than an object where the declared fields
 * need one.
 *
 * <p>Exactly as {@code from_json} (PERMISSIVE) with a schema of text fields and objects of them: a field's
 * JSON text is its string, or, for any other value, the JSON Jackson's generator copies of it (Spark's own
 * way: {@code 1.50} becomes {@code 1.5}, {@code 1e400} the text {@code "Infinity"}); undeclared keys are
 * parsed and skipped; a missing or {@code null} field is null. {@code test_strict_object_fields} compares
 * the two on every Spark line the project supports.
 *
 * <p>Arguments: the line; the schema as Spark's JSON ({@code StructType.json()}), a literal parsed once per
 * task; and the name of its corrupt-record column, which {@code from_json} fills only itself: that top-level
 * field is always null here, and a key of its name is not read.
 */
public final class StrictObjectFields implements UDF3<String, String, String, Row> {
  private static final long serialVersionUID = 1L;
  // Jackson's defaults are strict JSON. Stricter than the parsers of from_json and of one_object where they
  // differ (single quotes, control characters in strings, NaN: refused here), so every line this one
  // settles they accept too. One level of nesting less than their limit: one_object parses the line inside
  // `[...]` and `{"k": ...}`, one level deeper than the line itself. Names are not interned: their parsers
  // intern them in tables that refuse a line once too many names collide, a verdict that depends on the
  // lines read before it; a line of more than MAX_NAMES names is left to them instead.
  private static final JsonFactory STRICT =
      JsonFactory.builder()
          .configure(JsonFactory.Feature.CANONICALIZE_FIELD_NAMES, false)
          .streamReadConstraints(
              StreamReadConstraints.builder()
                  .maxNestingDepth(StreamReadConstraints.defaults().getMaxNestingDepth() - 1)
                  .build())
          .build();
  // The generator from_json copies a non-text value with: Jackson's defaults.
  private static final JsonFactory COPIER = new JsonFactory();
  private static final Object UNSET = new Object();
  // Fewer than the ~300 colliding names Jackson's name table needs before it refuses a line.
  private static final int MAX_NAMES = 256;

  /** The declared fields of one object: each name's position, and the fields of those that are objects. */
  private static final class Fields {
    final Map<String, Integer> position = new HashMap<>();
    final Fields[] nested;

    Fields(StructType struct, String unread) {
      StructField[] fields = struct.fields();
      nested = new Fields[fields.length];
      for (int i = 0; i < fields.length; i++) {
        if (fields[i].name().equals(unread)) { // `unread` may be null: no field is left unread
          continue;
        }
        position.put(fields[i].name(), i);
        DataType type = fields[i].dataType();
        nested[i] = type instanceof StructType ? new Fields((StructType) type, null) : null;
      }
    }
  }

  private static final class Parsed {
    final String schemaJson;
    final String corruptColumn;
    final Fields fields;

    Parsed(String schemaJson, String corruptColumn) {
      this.schemaJson = schemaJson;
      this.corruptColumn = corruptColumn;
      this.fields = new Fields((StructType) DataType.fromJson(schemaJson), corruptColumn);
    }
  }

  private transient volatile Parsed schema;

  private Fields fields(String schemaJson, String corruptColumn) {
    Parsed current = schema;
    if (current == null
        || !current.schemaJson.equals(schemaJson)
        || !Objects.equals(current.corruptColumn, corruptColumn)) {
      current = new Parsed(schemaJson, corruptColumn);
      schema = current;
    }
    return current.fields;
  }

  @Override
  public Row call(String line, String schemaJson, String corruptColumn) throws IOException {
    if (line == null) {
      return null;
    }
    // one_object's outer rule: the first and last characters other than spaces are the braces.
    int start = 0;
    int end = line.length();
    while (start < end && line.charAt(start) == ' ') {
      start++;
    }
    while (end > start && line.charAt(end - 1) == ' ') {
      end--;
    }
    if (end - start < 2 || line.charAt(start) != '{' || line.charAt(end - 1) != '}') {
      return null;
    }
    Fields declared = fields(schemaJson, corruptColumn);
    try (JsonParser parser = STRICT.createParser(line)) {
      if (parser.nextToken() != JsonToken.START_OBJECT) {
        return null;
      }
      Object[] values = object(parser, declared, new int[1]);
      // Anything after the object (a second record, a stray bracket) is not one object.
      if (values == null || parser.nextToken() != null) {
        return null;
      }
      return RowFactory.create(values);
    } catch (JsonProcessingException | RuntimeException notStrictJson) {
      // Not an error of the run: whatever Jackson refuses (from_json takes any parser exception for a
      // corrupt record), the lenient path reads the line and names what is wrong with it.
      return null;
    }
  }

  /**
   * The declared fields of the object the parser is in, or null when the lenient path must decide. {@code
   * names} counts the line's field names so far.
   */
  private static Object[] object(JsonParser parser, Fields declared, int[] names) throws IOException {
    Object[] values = new Object[declared.nested.length];
    Arrays.fill(values, UNSET);
    JsonToken token;
    while ((token = parser.nextToken()) == JsonToken.FIELD_NAME) {
      if (++names[0] > MAX_NAMES) {
        return null;
      }
      Integer i = declared.position.get(parser.currentName());
      JsonToken value = parser.nextToken();
      if (i == null) {
        if (!skip(parser, names)) {
          return null;
        }
        continue;
      }
      if (values[i] != UNSET) {
        return null; // a key given twice: which one a reader keeps is the lenient path's to say
      }
      Fields nested = declared.nested[i];
      if (value == JsonToken.VALUE_NULL) {
        values[i] = null;
      } else if (nested != null) {
        if (value != JsonToken.START_OBJECT) {
          return null; // from_json flags such a record; the lenient path names the field
        }
        Object[] inner = object(parser, nested, names);
        if (inner == null) {
          return null;
        }
        values[i] = RowFactory.create(inner);
      } else if (value == JsonToken.VALUE_STRING) {
        values[i] = parser.getText();
      } else {
        values[i] = copy(parser);
      }
    }
    if (token != JsonToken.END_OBJECT) {
      return null;
    }
    for (int i = 0; i < values.length; i++) {
      if (values[i] == UNSET) {
        values[i] = null;
      }
    }
    return values;
  }

  /**
   * Skips an undeclared value, still parsed strictly, counting its field names; false past MAX_NAMES.
   */
  private static boolean skip(JsonParser parser, int[] names) throws IOException {
    if (!parser.currentToken().isStructStart()) {
      return true;
    }
    int depth = 1;
    while (depth > 0) {
      JsonToken token = parser.nextToken(); // the end of the line inside a value is a parse error
      if (token.isStructStart()) {
        depth++;
      } else if (token.isStructEnd()) {
        depth--;
      } else if (token == JsonToken.FIELD_NAME && ++names[0] > MAX_NAMES) {
        return false;
      }
    }
    return true;
  }

  /** A non-text value as from_json gives it for a text field: Jackson's generator's copy, in UTF-8. */
  private static String copy(JsonParser parser) throws IOException {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    try (JsonGenerator generator = COPIER.createGenerator(bytes, JsonEncoding.UTF8)) {
      generator.copyCurrentStructure(parser);
    }
    return new String(bytes.toByteArray(), StandardCharsets.UTF_8);
  }
}
