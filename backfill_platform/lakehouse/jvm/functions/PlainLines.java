package backfill_platform.functions;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Iterator;
import java.util.List;
import java.util.NoSuchElementException;
import java.util.StringJoiner;
import org.apache.spark.TaskContext;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.api.java.function.FlatMapFunction;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.util.TaskCompletionListener;
import scala.Tuple2;

/**
 * Plain JSON-lines files read in the JVM, with their line numbers, so that a window of plain files needs no
 * Python stage at all ({@code pipeline/archive/readers.py} decides which files go where).
 *
 * <p>{@link #check} is a Spark job that scans each file and says whether it is plain ({@link LineScanner}: the
 * lines are exactly the Python reader's, with no defect for it to name); {@link #read} gives the plain files'
 * lines. A file that is not plain is read by the Python reader, which names its defects as before. A file that
 * stops being plain between the check and the read fails the run, naming it.
 */
public final class PlainLines {
  /** The rows of {@link #read}: the file's index in the window's list, the line's number, its UTF-8 bytes. */
  public static final StructType SCHEMA =
      new StructType()
          .add("_file", DataTypes.IntegerType, false)
          .add("_line_number", DataTypes.LongType, false)
          .add("_line_bytes", DataTypes.BinaryType, false);

  private PlainLines() {}

  // Lists cross py4j as one string each, NUL-separated (no path holds a NUL): py4j converts a Python list
  // element by element, a round trip each, and a year of small files is 25,000 paths (10 s of the run).
  private static final String SEPARATOR = "\0";

  /**
   * For each local path of {@code paths} (NUL-separated), in order and NUL-separated: empty when the file is
   * plain, else why the JVM does not read it (a line that is not UTF-8, too long, a byte-order mark, a damaged
   * gzip stream, a file it could not open).
   */
  public static String check(SparkSession spark, String paths, long maxLineBytes, int slices) {
    JavaSparkContext context = JavaSparkContext.fromSparkContext(spark.sparkContext());
    List<String> verdicts =
        context.parallelize(split(paths), slices).mapPartitions(new Check(maxLineBytes)).collect();
    StringJoiner joined = new StringJoiner(SEPARATOR);
    for (String verdict : verdicts) {
      joined.add(verdict == null ? "" : verdict.replace(SEPARATOR, " "));
    }
    return joined.toString();
  }

  /**
   * The lines of plain files, one row each: {@code files} (comma-separated) are the indexes of {@code paths}
   * (NUL-separated), in the same order.
   */
  public static Dataset<Row> read(SparkSession spark, String files, String paths, long maxLineBytes, int slices) {
    List<String> indexes = Arrays.asList(files.split(",", -1));
    List<String> names = split(paths);
    List<Tuple2<Integer, String>> pairs = new ArrayList<>(names.size());
    for (int i = 0; i < names.size(); i++) {
      pairs.add(new Tuple2<>(Integer.valueOf(indexes.get(i)), names.get(i)));
    }
    JavaSparkContext context = JavaSparkContext.fromSparkContext(spark.sparkContext());
    JavaRDD<Row> rows = context.parallelize(pairs, slices).mapPartitions(new Read(maxLineBytes));
    return spark.createDataFrame(rows, SCHEMA);
  }

  private static List<String> split(String paths) {
    return Arrays.asList(paths.split(SEPARATOR, -1));
  }

  // Named classes rather than lambdas: no call site linked at run time through method handles. (The
  // `InternalError: no such method: MethodHandle.linkToSpecial` first blamed on lambdas here was a full code
  // cache, the client compiler's 48 MiB: see LOCAL_CLIENT_JIT_OPTIONS in lakehouse/resources.py.)

  /** A task's verdicts on its files, in order; the scanners' buffer is shared by the task's files. */
  private static final class Check implements FlatMapFunction<Iterator<String>, String> {
    private static final long serialVersionUID = 1L;
    private final long maxLineBytes;

    Check(long maxLineBytes) {
      this.maxLineBytes = maxLineBytes;
    }

    @Override
    public Iterator<String> call(Iterator<String> files) {
      List<String> verdicts = new ArrayList<>();
      byte[][] buffer = {null};
      while (files.hasNext()) {
        verdicts.add(whyNotPlain(files.next(), maxLineBytes, buffer));
      }
      return verdicts.iterator();
    }
  }

  /** A task's rows: its files' lines. */
  private static final class Read implements FlatMapFunction<Iterator<Tuple2<Integer, String>>, Row> {
    private static final long serialVersionUID = 1L;
    private final long maxLineBytes;

    Read(long maxLineBytes) {
      this.maxLineBytes = maxLineBytes;
    }

    @Override
    public Iterator<Row> call(Iterator<Tuple2<Integer, String>> files) {
      return new Lines(files, maxLineBytes);
    }
  }

  /** Null when the file is plain, else why not; {@code buffer[0]} is the scanners' buffer, reused. */
  static String whyNotPlain(String path, long maxLineBytes, byte[][] buffer) {
    try (LineScanner lines = LineScanner.open(path, maxLineBytes, buffer[0])) {
      buffer[0] = lines.buffer();
      while (lines.next()) {
        // every line is checked as it is scanned
      }
      buffer[0] = lines.buffer();
      return null;
    } catch (NotPlain reason) {
      return reason.getMessage();
    } catch (IOException | RuntimeException error) {
      return "not readable here: " + error;
    }
  }

  /** A task's files' rows, streamed a file at a time; the open file is closed at its end, or when the task ends. */
  private static final class Lines implements Iterator<Row>, TaskCompletionListener {
    private final Iterator<Tuple2<Integer, String>> files;
    private final long maxLineBytes;
    private int file;
    private String path;
    private LineScanner scanner;
    private byte[] buffer;
    private boolean ready;

    Lines(Iterator<Tuple2<Integer, String>> files, long maxLineBytes) {
      this.files = files;
      this.maxLineBytes = maxLineBytes;
      TaskContext task = TaskContext.get();
      if (task != null) {
        task.addTaskCompletionListener(this);
      }
    }

    @Override
    public boolean hasNext() {
      try {
        while (!ready) {
          if (scanner == null) {
            if (!files.hasNext()) {
              return false;
            }
            Tuple2<Integer, String> next = files.next();
            file = next._1();
            path = next._2();
            scanner = LineScanner.open(path, maxLineBytes, buffer);
          }
          ready = scanner.next();
          if (!ready) {
            closeScanner();
          }
        }
        return true;
      } catch (NotPlain changed) {
        throw new IllegalStateException(
            path + " is no longer plain JSON lines since it was checked in this run: " + changed.getMessage());
      } catch (IOException error) {
        throw new UncheckedIOException("reading " + path + " failed", error);
      }
    }

    @Override
    public void onTaskCompletion(TaskContext context) {
      closeScanner();
    }

    @Override
    public Row next() {
      if (!hasNext()) {
        throw new NoSuchElementException();
      }
      ready = false;
      return RowFactory.create(file, scanner.number(), scanner.bytes());
    }

    private void closeScanner() {
      if (scanner != null) {
        buffer = scanner.buffer();
        try {
          scanner.close();
        } catch (IOException error) {
          throw new UncheckedIOException("closing " + path + " failed", error);
        } finally {
          scanner = null;
        }
      }
    }
  }
}
