package io.hudicdc.writer;

import java.io.File;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeSet;
import java.util.stream.Collectors;

import org.apache.avro.generic.GenericRecord;
import org.apache.hudi.AvroConversionUtils$;
import org.apache.hudi.HoodieSchemaConversionUtils$;
import org.apache.hudi.client.HoodieJavaWriteClient;
import org.apache.hudi.client.WriteStatus;
import org.apache.hudi.client.common.HoodieJavaEngineContext;
import org.apache.hudi.common.config.TypedProperties;
import org.apache.hudi.common.fs.FSUtils;
import org.apache.hudi.common.model.DefaultHoodieRecordPayload;
import org.apache.hudi.common.model.FileSlice;
import org.apache.hudi.common.model.HoodieAvroRecord;
import org.apache.hudi.common.model.HoodieCommitMetadata;
import org.apache.hudi.common.model.HoodieKey;
import org.apache.hudi.common.model.HoodieRecord;
import org.apache.hudi.common.model.HoodieRecordLocation;
import org.apache.hudi.common.model.HoodieWriteStat;
import org.apache.hudi.common.schema.HoodieSchema;
import org.apache.hudi.common.table.HoodieTableMetaClient;
import org.apache.hudi.common.table.TableSchemaResolver;
import org.apache.hudi.common.table.timeline.HoodieInstant;
import org.apache.hudi.common.table.timeline.HoodieTimeline;
import org.apache.hudi.common.util.Option;
import org.apache.hudi.config.HoodieWriteConfig;
import org.apache.hudi.hadoop.fs.HadoopFSUtils;
import org.apache.hudi.index.bucket.BucketIdentifier;
import org.apache.hudi.keygen.BaseKeyGenerator;
import org.apache.hudi.keygen.factory.HoodieAvroKeyGeneratorFactory;
import org.apache.hudi.storage.StorageConfiguration;
import org.apache.hudi.table.HoodieJavaTable;
import org.apache.hudi.table.HoodieTable;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

import scala.Function1;

/**
 * One small upsert into a MERGE_ON_READ table with the (simple) bucket index, through Hudi's Java
 * write client in the driver's JVM: no Spark job writes, tags or commits it.
 *
 * <p>The rows are the round's write plan (one row per key, deletes flagged by
 * {@code _hoodie_is_deleted}), collected to the driver once. Each becomes an Avro record of the
 * table's own schema, keyed by the table's key generator and ordered by the ordering field, as
 * Spark's datasource would; it is tagged with its bucket's file group the way Hudi's bucket index
 * tags it, then written as a prepped upsert (log blocks appended to those file groups) and
 * committed with the round's extra metadata (its checkpoint) in the same commit. A bucket with no
 * file group yet gets one named for its bucket whose first slice is log files only, based at the
 * round's instant: how Spark's bucket writes make a new bucket's file group under non-blocking
 * concurrency control (otherwise they write it a base file); Hudi's readers, its bucket index and
 * its compaction take either.
 *
 * <p>This path only ever steps aside; it never holds a table up. {@link #write} answers
 * <ul>
 * <li>{@code "skip:" + why} when it declines, having written nothing, whenever the datasource would
 * do something this path does not: a schema that is not the table's, a null in a column the table
 * declares NOT NULL (the datasource relaxes the column), a key Avro and Spark might render
 * differently, an index in the metadata table
 * the Java engine cannot maintain, an earlier write's instant still pending (the datasource rolls it
 * back), a compaction plan pending where compaction runs inline (the datasource's round executes
 * it);
 * <li>{@code "fail:" + error} when it failed before its commit started (an out-of-memory error
 * included): nothing was written;
 * <li>{@code "corrupt:" + what} when a bucket has two file groups, which Hudi's bucket index refuses
 * too;
 * <li>{@code "commit:" + instant} when it committed.
 * </ul>
 * In the first three the caller writes with Spark or stops. A failure after the commit started is
 * thrown: the inflight instant is the next round's to roll back, and that round is Spark's.
 *
 * <p>Compaction never runs here: where the table compacts inline, the commit schedules the plan
 * (Hudi's trigger) and the next round goes to the datasource, whose inline compaction executes
 * pending plans first; with async compaction the compactor executes it. A compaction merges whole
 * file groups with Hudi's per-merge memory budget, which the driver's heap was never sized for.
 */
public final class SmallWrite {
  private SmallWrite() {}

  private static final String DELETED = "_hoodie_is_deleted";
  private static final String INLINE_COMPACTION = "hoodie.compact.inline";
  private static final String SCHEDULE_INLINE_COMPACTION = "hoodie.compact.schedule.inline";

  /** Writes {@code rows}: {@code "commit:" + instant}, or {@code "skip:"}, {@code "fail:"} or {@code "corrupt:"} having written nothing. */
  public static String write(SparkSession spark, Dataset<Row> rows, String basePath, Map<String, String> options,
      Map<String, String> extraMetadata) throws Exception {
    HoodieJavaWriteClient<DefaultHoodieRecordPayload> client = null;
    List<HoodieRecord<DefaultHoodieRecordPayload>> records;
    HoodieTableMetaClient meta;
    Map<Integer, List<HoodieRecord<DefaultHoodieRecordPayload>>> newBuckets;
    try {
      if ("fail-before-commit".equals(testHook("java_writer"))) {
        throw new IllegalStateException("failure injected before the commit (hudi_cdc.test.java_writer)");
      }
      StorageConfiguration<?> storage = HadoopFSUtils.getStorageConf(spark.sparkContext().hadoopConfiguration());
      meta = HoodieTableMetaClient.builder().setConf(storage).setBasePath(basePath).build();
      String pending = pending(meta, options);
      if (pending != null) {
        return "skip:" + pending;
      }
      HoodieSchema schema = new TableSchemaResolver(meta).getTableSchema(false);
      StructType struct = rows.schema();
      String why = declined(struct, schema, options);
      if (why == null) {
        why = metadataIndexes(meta);
      }
      if (why != null) {
        return "skip:" + why;
      }
      HoodieWriteConfig config = HoodieWriteConfig.newBuilder().withPath(basePath).withSchema(schema.toString())
          .withProps(clientOptions(options)).build();
      records = new ArrayList<>();
      why = records(rows, struct, schema, options, records);
      if (why != null) {
        return "skip:" + why;
      }
      client = new Client(new HoodieJavaEngineContext(storage), config);
      // One meta client for the round: the schema above, the file slices here, the instant's transition below.
      HoodieJavaTable<DefaultHoodieRecordPayload> table = HoodieJavaTable.create(config, client.getEngineContext(), meta);
      Map<Integer, HoodieRecordLocation> locations = new HashMap<>();
      String corrupt = bucketLocations(table, options, locations);
      if (corrupt != null) {
        return "corrupt:" + corrupt;
      }
      newBuckets = tag(records, locations, config);
    } catch (Throwable failed) {  // nothing written yet: the datasource writes the round instead
      if (client != null) {
        client.close();
      }
      if (failed instanceof InternalError || failed instanceof ThreadDeath) {
        throw (Error) failed;  // the JVM itself is broken: no other path would fare better
      }
      return "fail:" + describe(failed);
    }
    try {
      return "commit:" + upsert(client, meta, records, newBuckets, extraMetadata);
    } finally {
      client.close();
    }
  }

  /** Why this path cannot write these rows as Spark's datasource would, or null if it can. */
  static String declined(StructType struct, HoodieSchema schema, Map<String, String> options) {
    StructType stored = HoodieSchemaConversionUtils$.MODULE$.convertHoodieSchemaToStructType(schema);
    // catalogString names every nested field and type but not nullability, which Spark relaxes on
    // write; a null where the table says NOT NULL is looked for in the rows themselves (records).
    if (!stored.catalogString().equals(struct.catalogString())) {
      return "the rows' schema is not the table's (" + struct.catalogString() + " against " + stored.catalogString() + ")";
    }
    String partitioned = options.getOrDefault("hoodie.datasource.write.partitionpath.field", "");
    if (!partitioned.isEmpty()) {
      return "a partitioned table";
    }
    for (String field : options.getOrDefault("hoodie.datasource.write.recordkey.field", "").split(",")) {
      if (!struct.getFieldIndex(field).isDefined()) {
        return "no key field " + field;
      }
      DataType type = struct.apply(field).dataType();
      // Avro and Spark render these alike as key text; a decimal, date or timestamp may differ.
      boolean plain = type.equals(DataTypes.StringType) || type.equals(DataTypes.LongType)
          || type.equals(DataTypes.IntegerType) || type.equals(DataTypes.ShortType) || type.equals(DataTypes.ByteType);
      if (!plain) {
        return "key field " + field + " is " + type.simpleString();
      }
    }
    return null;
  }

  /** An instant this path must leave to the datasource, or null: an earlier write's, or a plan to compact inline. */
  private static String pending(HoodieTableMetaClient meta, Map<String, String> options) {
    HoodieTimeline timeline = meta.getActiveTimeline();
    List<String> writes = timeline.getDeltaCommitTimeline().filterInflightsAndRequested().getInstantsAsStream()
        .map(HoodieInstant::requestedTime).collect(Collectors.toList());
    if (!writes.isEmpty()) {
      // A write that failed or was killed: the datasource's round rolls it back first, as it always has.
      return "an earlier write's instant " + String.join(", ", writes) + " is pending: Spark's datasource rolls it back";
    }
    List<String> plans = timeline.filterPendingCompactionTimeline().getInstantsAsStream()
        .map(HoodieInstant::requestedTime).collect(Collectors.toList());
    if (!plans.isEmpty() && Boolean.parseBoolean(options.getOrDefault(INLINE_COMPACTION, "false"))) {
      return "compaction " + String.join(", ", plans) + " is pending: Spark's datasource runs it in this round";
    }
    return null;
  }

  /** An index in the metadata table the Java engine cannot maintain (computed with Spark), or null. */
  private static String metadataIndexes(HoodieTableMetaClient meta) {
    for (String partition : meta.getTableConfig().getMetadataPartitions()) {
      if (partition.startsWith("expr_index_") || partition.startsWith("secondary_index_")) {
        return "the metadata table has index " + partition + ", which Hudi's Java client does not maintain";
      }
    }
    return null;
  }

  /**
   * The round's options for the Java client: no timeline server or its markers (a client lives one
   * round), and no compaction executed here: at most its plan is scheduled, for Spark to run.
   */
  private static Properties clientOptions(Map<String, String> options) {
    Properties props = new Properties();
    props.putAll(options);
    // The Java client's index factory has no bucket index: records are tagged here and written prepped.
    props.put("hoodie.index.type", "SIMPLE");
    props.put("hoodie.write.record.merge.custom.implementation.classes",
        "org.apache.hudi.common.model.HoodieAvroRecordMerger");
    props.put("hoodie.embed.timeline.server", "false");
    props.put("hoodie.write.markers.type", "DIRECT");
    // Records tagged by bucket carry no base-file position, so no log block of this client holds positions
    // (readers merge by key); with positions on, each append handle would list its file group's files once
    // more (a metadata-table read) only to name the base file they would refer to.
    props.put("hoodie.write.record.positions", "false");
    boolean schedule = Boolean.parseBoolean(options.getOrDefault(INLINE_COMPACTION, "false"))
        || Boolean.parseBoolean(options.getOrDefault(SCHEDULE_INLINE_COMPACTION, "false"));
    props.put(INLINE_COMPACTION, "false");
    props.put(SCHEDULE_INLINE_COMPACTION, String.valueOf(schedule));
    return props;
  }

  /**
   * Adds the rows to {@code out} as Hudi records of the table's schema, keyed and ordered as the
   * datasource keys and orders them; why not, if a row holds a null in a column the table declares
   * NOT NULL (Avro cannot write it; the datasource writes the round and relaxes the column).
   */
  private static String records(Dataset<Row> rows, StructType struct, HoodieSchema schema, Map<String, String> options,
      List<HoodieRecord<DefaultHoodieRecordPayload>> out) throws Exception {
    StructType stored = HoodieSchemaConversionUtils$.MODULE$.convertHoodieSchemaToStructType(schema);
    List<Integer> notNull = new ArrayList<>();
    for (int i = 0; i < struct.fields().length; i++) {
      StructField field = struct.fields()[i];
      if (field.nullable() && !stored.apply(field.name()).nullable()) {
        notNull.add(i);
      }
    }
    Function1<InternalRow, GenericRecord> toAvro =
        AvroConversionUtils$.MODULE$.createInternalRowToAvroConverter(struct, schema, false);
    TypedProperties props = new TypedProperties();
    props.putAll(options);
    BaseKeyGenerator keys = (BaseKeyGenerator) HoodieAvroKeyGeneratorFactory.createKeyGenerator(props);
    String ordering = options.get("hoodie.datasource.write.precombine.field");
    InternalRow[] collected = rows.queryExecution().executedPlan().executeCollect();
    for (InternalRow row : collected) {
      for (int i : notNull) {
        if (row.isNullAt(i)) {
          return "column " + struct.fields()[i].name() + " is null in a row but NOT NULL in the table's schema";
        }
      }
      GenericRecord record = toAvro.apply(row);
      HoodieKey key = keys.getKey(record);
      Object order = record.get(ordering);
      // Avro strings arrive as Utf8; a delete's ordering value is stored as a Java object.
      Comparable<?> value = order == null ? null : (Comparable<?>) (order instanceof CharSequence ? order.toString() : order);
      out.add(new HoodieAvroRecord<>(key, new DefaultHoodieRecordPayload(record, value)));
    }
    return null;
  }

  /**
   * Fills {@code locations} with each bucket's file group, as Hudi's bucket index maps them; a
   * description of the corruption if a bucket has two (the index throws on it; tagged here, a key
   * would go to whichever came last, splitting its versions over two file groups).
   */
  private static String bucketLocations(HoodieJavaTable<DefaultHoodieRecordPayload> table, Map<String, String> options,
      Map<Integer, HoodieRecordLocation> locations) {
    List<FileSlice> slices = table.getSliceView().getLatestFileSlices("").collect(Collectors.toList());
    for (FileSlice slice : slices) {
      int bucket = BucketIdentifier.bucketIdFromFileId(slice.getFileId());
      HoodieRecordLocation other = locations.get(bucket);
      if (other != null) {
        String name = options.getOrDefault("hoodie.table.name", table.getMetaClient().getTableConfig().getTableName());
        return "table " + name + " at " + table.getMetaClient().getBasePath() + ": bucket " + bucket
            + " has two file groups, " + other.getFileId() + " (base instant " + other.getInstantTime() + ") and "
            + slice.getFileId() + " (base instant " + slice.getBaseInstantTime() + "); Hudi's bucket index allows one "
            + "per bucket and refuses to write the table (\"Find multiple files ... that belong to the same bucket id = "
            + bucket + "\"): a key of this bucket may have versions in both. Roll back the instant that created the "
            + "second file group (Hudi's rollback_to_instant procedure) or restore the table to before it";
      }
      locations.put(bucket, new HoodieRecordLocation(slice.getBaseInstantTime(), slice.getFileId()));
    }
    return null;
  }

  /**
   * Tags each record with its bucket's file group as the bucket index would; the records of buckets
   * with no file group yet, by bucket, left untagged for {@link #upsert} to give a new one.
   */
  private static Map<Integer, List<HoodieRecord<DefaultHoodieRecordPayload>>> tag(
      List<HoodieRecord<DefaultHoodieRecordPayload>> records, Map<Integer, HoodieRecordLocation> locations,
      HoodieWriteConfig config) {
    String hashField = config.getBucketIndexHashField();
    if (hashField == null || hashField.isEmpty()) {  // the datasource's default: the record key
      hashField = config.getString("hoodie.datasource.write.recordkey.field");
    }
    int buckets = config.getBucketIndexNumBuckets();
    Map<Integer, List<HoodieRecord<DefaultHoodieRecordPayload>>> untagged = new HashMap<>();
    for (HoodieRecord<DefaultHoodieRecordPayload> record : records) {
      int bucket = BucketIdentifier.getBucketId(record.getRecordKey(), hashField, buckets);
      HoodieRecordLocation location = locations.get(bucket);
      if (location == null) {
        untagged.computeIfAbsent(bucket, b -> new ArrayList<>()).add(record);
      } else {
        locate(record, location);
      }
    }
    return untagged;
  }

  /**
   * Gives each bucket in {@code newBuckets} a new file group as Spark's bucket partitioner names one
   * (the bucket's file id prefix, write number 0); the append handle makes its first slice log files
   * only, based at {@code instant}, which it takes from the records' location.
   */
  private static void locateNewBuckets(Map<Integer, List<HoodieRecord<DefaultHoodieRecordPayload>>> newBuckets,
      String instant, HoodieWriteConfig config) {
    for (int bucket : new TreeSet<>(newBuckets.keySet())) {
      String prefix = BucketIdentifier.newBucketFileIdPrefix(bucket, config.isNonBlockingConcurrencyControl());
      HoodieRecordLocation location = new HoodieRecordLocation(instant, FSUtils.createNewFileId(prefix, 0));
      for (HoodieRecord<DefaultHoodieRecordPayload> record : newBuckets.get(bucket)) {
        locate(record, location);
      }
    }
  }

  private static void locate(HoodieRecord<DefaultHoodieRecordPayload> record, HoodieRecordLocation location) {
    record.unseal();
    record.setCurrentLocation(location);
    record.seal();
  }

  /**
   * One prepped upsert and its commit, carrying {@code extraMetadata}; the commit's instant. The
   * records of {@code newBuckets} get their new file groups here, once the instant is known.
   */
  private static String upsert(HoodieJavaWriteClient<DefaultHoodieRecordPayload> client, HoodieTableMetaClient meta,
      List<HoodieRecord<DefaultHoodieRecordPayload>> records,
      Map<Integer, List<HoodieRecord<DefaultHoodieRecordPayload>>> newBuckets, Map<String, String> extraMetadata) {
    String instant = client.startCommit();
    locateNewBuckets(newBuckets, instant, client.getConfig());
    // Unlike the Spark executors, the Java client's prepped delta commit (written for the metadata
    // table's own commits) leaves its instant requested; committing needs it inflight.
    meta.getActiveTimeline().transitionRequestedToInflight(HoodieTimeline.DELTA_COMMIT_ACTION, instant);
    List<WriteStatus> statuses = client.upsertPreppedRecords(records, instant);
    long errors = statuses.stream().mapToLong(WriteStatus::getTotalErrorRecords).sum();
    if (errors > 0) {
      WriteStatus first = statuses.stream().filter(s -> s.getTotalErrorRecords() > 0).findFirst().get();
      throw new IllegalStateException(errors + " records failed in " + instant + ", e.g. "
          + first.getErrors().values().stream().findFirst().map(Throwable::toString).orElse("?"));
    }
    if (!client.commit(instant, statuses, Option.of(new HashMap<>(extraMetadata)))) {
      throw new IllegalStateException("Hudi refused commit " + instant);
    }
    return instant;
  }

  /** The failure's class and message, and its causes'. */
  private static String describe(Throwable failed) {
    StringBuilder text = new StringBuilder();
    for (Throwable t = failed; t != null && text.length() < 2000; t = t.getCause() == t ? null : t.getCause()) {
      text.append(text.length() == 0 ? "" : " <- ").append(t.getClass().getName());
      if (t.getMessage() != null) {
        text.append(": ").append(t.getMessage());
      }
    }
    return text.toString();
  }

  /** A test's hook: the system property {@code hudi_cdc.test.<name>}, else the variable {@code HUDI_CDC_TEST_<NAME>}. */
  private static String testHook(String name) {
    String value = System.getProperty("hudi_cdc.test." + name);
    return value != null ? value : System.getenv("HUDI_CDC_TEST_" + name.toUpperCase());
  }

  /**
   * The Java client whose commit can be held, for crash tests, at its latest point: the log blocks
   * written and the metadata table's delta commit complete, the table's instant not yet.
   */
  private static final class Client extends HoodieJavaWriteClient<DefaultHoodieRecordPayload> {
    Client(HoodieJavaEngineContext context, HoodieWriteConfig config) {
      super(context, config);
    }

    @Override
    @SuppressWarnings("rawtypes")
    protected void writeToMetadataTable(boolean skip, HoodieTable table, String instant, List<HoodieWriteStat> stats,
        HoodieCommitMetadata metadata) {
      super.writeToMetadataTable(skip, table, instant, stats, metadata);
      String marker = testHook("pause_before_java_commit");
      if (marker != null && !marker.isEmpty()) {
        try {
          File written = new File(marker + ".tmp");
          try (OutputStream out = new FileOutputStream(written)) {
            out.write((ManagementFactory.getRuntimeMXBean().getName() + " " + instant).getBytes(StandardCharsets.UTF_8));
          }
          if (!written.renameTo(new File(marker))) {
            throw new IllegalStateException("cannot rename " + written + " to " + marker);
          }
          Thread.sleep(600_000L);  // the test kills the process here
        } catch (IOException | InterruptedException e) {
          throw new IllegalStateException(e);
        }
      }
    }
  }
}
