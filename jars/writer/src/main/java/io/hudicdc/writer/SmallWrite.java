package io.hudicdc.writer;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;

import org.apache.avro.generic.GenericRecord;
import org.apache.hudi.AvroConversionUtils$;
import org.apache.hudi.HoodieSchemaConversionUtils$;
import org.apache.hudi.client.HoodieJavaWriteClient;
import org.apache.hudi.client.WriteStatus;
import org.apache.hudi.client.common.HoodieJavaEngineContext;
import org.apache.hudi.common.config.TypedProperties;
import org.apache.hudi.common.model.DefaultHoodieRecordPayload;
import org.apache.hudi.common.model.FileSlice;
import org.apache.hudi.common.model.HoodieAvroRecord;
import org.apache.hudi.common.model.HoodieKey;
import org.apache.hudi.common.model.HoodieRecord;
import org.apache.hudi.common.model.HoodieRecordLocation;
import org.apache.hudi.common.schema.HoodieSchema;
import org.apache.hudi.common.table.HoodieTableMetaClient;
import org.apache.hudi.common.table.TableSchemaResolver;
import org.apache.hudi.common.table.timeline.HoodieTimeline;
import org.apache.hudi.common.util.Option;
import org.apache.hudi.config.HoodieWriteConfig;
import org.apache.hudi.hadoop.fs.HadoopFSUtils;
import org.apache.hudi.index.bucket.BucketIdentifier;
import org.apache.hudi.keygen.BaseKeyGenerator;
import org.apache.hudi.keygen.factory.HoodieAvroKeyGeneratorFactory;
import org.apache.hudi.storage.StorageConfiguration;
import org.apache.hudi.table.HoodieJavaTable;
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
 * committed with the round's extra metadata (its checkpoint) in the same commit.
 *
 * <p>{@link #write} declines (returns {@code "skip:" + reason}) before it starts a commit whenever
 * the Spark datasource would do something this path does not: a schema that is not the table's,
 * a key Avro and Spark might render differently, a bucket with no file group yet (Spark creates
 * it; tagged here it would not be named by its bucket). The caller then writes with Spark.
 */
public final class SmallWrite {
  private SmallWrite() {}

  private static final String DELETED = "_hoodie_is_deleted";

  /** Writes {@code rows}; returns {@code "commit:" + instant}, or {@code "skip:" + why} having written nothing. */
  public static String write(SparkSession spark, Dataset<Row> rows, String basePath, Map<String, String> options,
      Map<String, String> extraMetadata) throws Exception {
    StorageConfiguration<?> storage = HadoopFSUtils.getStorageConf(spark.sparkContext().hadoopConfiguration());
    HoodieTableMetaClient meta = HoodieTableMetaClient.builder().setConf(storage).setBasePath(basePath).build();
    HoodieSchema schema = new TableSchemaResolver(meta).getTableSchema(false);
    StructType struct = rows.schema();
    String why = declined(struct, schema, options);
    if (why != null) {
      return "skip:" + why;
    }
    HoodieWriteConfig config = HoodieWriteConfig.newBuilder().withPath(basePath).withSchema(schema.toString())
        .withProps(clientOptions(options)).build();
    List<HoodieRecord<DefaultHoodieRecordPayload>> records = records(rows, struct, schema, options);
    try (HoodieJavaWriteClient<DefaultHoodieRecordPayload> client =
        new HoodieJavaWriteClient<>(new HoodieJavaEngineContext(storage), config)) {
      // One meta client for the round: the schema above, the file slices here, the instant's transition below.
      HoodieJavaTable<DefaultHoodieRecordPayload> table = HoodieJavaTable.create(config, client.getEngineContext(), meta);
      String missing = tag(records, table, config);
      if (missing != null) {
        return "skip:" + missing;
      }
      return "commit:" + upsert(client, meta, records, extraMetadata);
    }
  }

  /** Why this path cannot write these rows as Spark's datasource would, or null if it can. */
  static String declined(StructType struct, HoodieSchema schema, Map<String, String> options) {
    StructType stored = HoodieSchemaConversionUtils$.MODULE$.convertHoodieSchemaToStructType(schema);
    // catalogString names every nested field and type but not nullability, which Spark relaxes on write.
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

  /** The round's options for the Java client: no timeline server or its markers (a client lives one round). */
  private static Properties clientOptions(Map<String, String> options) {
    Properties props = new Properties();
    props.putAll(options);
    // The Java client's index factory has no bucket index: records are tagged here and written prepped.
    props.put("hoodie.index.type", "SIMPLE");
    props.put("hoodie.write.record.merge.custom.implementation.classes",
        "org.apache.hudi.common.model.HoodieAvroRecordMerger");
    props.put("hoodie.embed.timeline.server", "false");
    props.put("hoodie.write.markers.type", "DIRECT");
    return props;
  }

  /** The rows as Hudi records of the table's schema, keyed and ordered as the datasource keys and orders them. */
  private static List<HoodieRecord<DefaultHoodieRecordPayload>> records(Dataset<Row> rows, StructType struct,
      HoodieSchema schema, Map<String, String> options) throws Exception {
    Function1<InternalRow, GenericRecord> toAvro =
        AvroConversionUtils$.MODULE$.createInternalRowToAvroConverter(struct, schema, false);
    TypedProperties props = new TypedProperties();
    props.putAll(options);
    BaseKeyGenerator keys = (BaseKeyGenerator) HoodieAvroKeyGeneratorFactory.createKeyGenerator(props);
    String ordering = options.get("hoodie.datasource.write.precombine.field");
    InternalRow[] collected = rows.queryExecution().executedPlan().executeCollect();
    List<HoodieRecord<DefaultHoodieRecordPayload>> out = new ArrayList<>(collected.length);
    for (InternalRow row : collected) {
      GenericRecord record = toAvro.apply(row);
      HoodieKey key = keys.getKey(record);
      Object order = record.get(ordering);
      // Avro strings arrive as Utf8; a delete's ordering value is stored as a Java object.
      Comparable<?> value = order == null ? null : (Comparable<?>) (order instanceof CharSequence ? order.toString() : order);
      out.add(new HoodieAvroRecord<>(key, new DefaultHoodieRecordPayload(record, value)));
    }
    return out;
  }

  /** Tags each record with its bucket's file group as the bucket index would; the missing bucket, if any. */
  private static String tag(List<HoodieRecord<DefaultHoodieRecordPayload>> records,
      HoodieJavaTable<DefaultHoodieRecordPayload> table, HoodieWriteConfig config) {
    Map<Integer, HoodieRecordLocation> locations = new HashMap<>();
    table.getSliceView().getLatestFileSlices("").forEach((FileSlice slice) -> locations.put(
        BucketIdentifier.bucketIdFromFileId(slice.getFileId()),
        new HoodieRecordLocation(slice.getBaseInstantTime(), slice.getFileId())));
    String hashField = config.getBucketIndexHashField();
    if (hashField == null || hashField.isEmpty()) {  // the datasource's default: the record key
      hashField = config.getString("hoodie.datasource.write.recordkey.field");
    }
    int buckets = config.getBucketIndexNumBuckets();
    for (HoodieRecord<DefaultHoodieRecordPayload> record : records) {
      int bucket = BucketIdentifier.getBucketId(record.getRecordKey(), hashField, buckets);
      HoodieRecordLocation location = locations.get(bucket);
      if (location == null) {
        return "bucket " + bucket + " of " + buckets + " has no file group yet";
      }
      record.unseal();
      record.setCurrentLocation(location);
      record.seal();
    }
    return null;
  }

  /** One prepped upsert and its commit, carrying {@code extraMetadata}; the commit's instant. */
  private static String upsert(HoodieJavaWriteClient<DefaultHoodieRecordPayload> client, HoodieTableMetaClient meta,
      List<HoodieRecord<DefaultHoodieRecordPayload>> records, Map<String, String> extraMetadata) {
    String instant = client.startCommit();
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
}
