package io.hudicdc.bench;

import java.io.IOException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import org.apache.avro.Schema;
import org.apache.avro.generic.GenericDatumReader;
import org.apache.avro.generic.GenericRecord;
import org.apache.avro.io.DecoderFactory;
import org.apache.avro.io.JsonDecoder;
import org.apache.hadoop.conf.Configuration;
import org.apache.hudi.client.HoodieJavaWriteClient;
import org.apache.hudi.client.WriteStatus;
import org.apache.hudi.client.common.HoodieJavaEngineContext;
import org.apache.hudi.common.model.HoodieAvroPayload;
import org.apache.hudi.common.model.HoodieAvroRecord;
import org.apache.hudi.common.model.HoodieKey;
import org.apache.hudi.common.model.FileSlice;
import org.apache.hudi.common.model.HoodieRecord;
import org.apache.hudi.common.model.HoodieRecordLocation;
import org.apache.hudi.common.table.HoodieTableMetaClient;
import org.apache.hudi.common.table.TableSchemaResolver;
import org.apache.hudi.common.table.timeline.HoodieTimeline;
import org.apache.hudi.config.HoodieWriteConfig;
import org.apache.hudi.hadoop.fs.HadoopFSUtils;
import org.apache.hudi.index.bucket.BucketIdentifier;
import org.apache.hudi.table.HoodieJavaTable;

/**
 * The JVM side of bench/java_client.py: one small upsert through Hudi's Java write client,
 * so that Python crosses py4j a few times per round, not per row.
 */
public final class JavaClientRound {
  private JavaClientRound() {}

  /** The table's Avro schema without Hudi's meta columns. */
  public static String tableSchema(String basePath) throws Exception {
    HoodieTableMetaClient meta = HoodieTableMetaClient.builder()
        .setConf(HadoopFSUtils.getStorageConf(new Configuration())).setBasePath(basePath).build();
    return new TableSchemaResolver(meta).getTableSchema(false).toAvroSchema().toString();
  }

  /** A write client for the table, kept for every round (and its embedded timeline server with it). */
  public static HoodieJavaWriteClient<HoodieAvroPayload> client(String basePath, String schema, Map<String, String> options) {
    HoodieWriteConfig config = HoodieWriteConfig.newBuilder()
        .withPath(basePath).withSchema(schema).withProps(options).build();
    return new HoodieJavaWriteClient<>(new HoodieJavaEngineContext(HadoopFSUtils.getStorageConf(new Configuration())), config);
  }

  /** Rows as Avro JSON, one a line, to Hudi records keyed by {@code keyField} and ordered by {@code orderingField}. */
  public static List<HoodieRecord<HoodieAvroPayload>> records(String schemaJson, String lines, String keyField,
      String orderingField) throws IOException {
    Schema schema = new Schema.Parser().parse(schemaJson);
    GenericDatumReader<GenericRecord> reader = new GenericDatumReader<>(schema);
    JsonDecoder decoder = DecoderFactory.get().jsonDecoder(schema, "");
    List<HoodieRecord<HoodieAvroPayload>> out = new ArrayList<>();
    for (String line : lines.split("\n")) {
      if (line.isEmpty()) {
        continue;
      }
      decoder.configure(line);
      GenericRecord row = reader.read(null, decoder);
      HoodieKey key = new HoodieKey(String.valueOf(row.get(keyField)), "");
      Comparable<?> order = (Comparable<?>) row.get(orderingField);
      out.add(new HoodieAvroRecord<>(key, new HoodieAvroPayload(row, order)));
    }
    return out;
  }

  /**
   * One upsert and its commit; returns the milliseconds of its steps ({@code tag=..,write=..,commit=..}),
   * or throws if a record failed.
   *
   * <p>Hudi 1.2's Java client has no bucket index (its index factory knows simple, global simple,
   * bloom and in-memory only), so with {@code buckets > 0} the records are tagged here as the
   * bucket index would tag them: a key's bucket is its hash modulo the bucket count, and the
   * bucket's file group is the one whose file id starts with that number. They then go through
   * the prepped upsert, which skips the index. Every bucket must already have a file group (the
   * benchmark writes updates only).
   */
  public static String upsert(HoodieJavaWriteClient<HoodieAvroPayload> client,
      List<HoodieRecord<HoodieAvroPayload>> records, String hashField, int buckets) {
    long began = System.nanoTime();
    String instant = client.startCommit();
    long tagged = began;
    List<WriteStatus> statuses;
    if (buckets > 0) {
      HoodieJavaTable<HoodieAvroPayload> table = HoodieJavaTable.create(client.getConfig(), client.getEngineContext());
      Map<Integer, HoodieRecordLocation> locations = new HashMap<>();
      table.getSliceView().getLatestFileSlices("").forEach((FileSlice slice) -> locations.put(
          BucketIdentifier.bucketIdFromFileId(slice.getFileId()),
          new HoodieRecordLocation(slice.getBaseInstantTime(), slice.getFileId())));
      for (HoodieRecord<HoodieAvroPayload> record : records) {
        int bucket = BucketIdentifier.getBucketId(record.getRecordKey(), hashField, buckets);
        HoodieRecordLocation location = locations.get(bucket);
        if (location == null) {
          throw new IllegalStateException("bucket " + bucket + " has no file group yet");
        }
        record.unseal();
        record.setCurrentLocation(location);
        record.seal();
      }
      // Unlike the other executors, the Java client's prepped delta commit (written for the metadata
      // table's own commits) leaves the instant requested; the commit needs it inflight.
      table.getMetaClient().getActiveTimeline().transitionRequestedToInflight(HoodieTimeline.DELTA_COMMIT_ACTION, instant);
      tagged = System.nanoTime();
      statuses = client.upsertPreppedRecords(records, instant);
    } else {
      tagged = System.nanoTime();
      statuses = client.upsert(records, instant);
    }
    long written = System.nanoTime();
    long errors = statuses.stream().mapToLong(WriteStatus::getTotalErrorRecords).sum();
    if (errors > 0) {
      throw new IllegalStateException(errors + " records failed in " + instant);
    }
    if (!client.commit(instant, statuses)) {
      throw new IllegalStateException("commit " + instant + " was refused");
    }
    long committed = System.nanoTime();
    return String.format("start_tag=%d,write=%d,commit=%d", (tagged - began) / 1_000_000,
        (written - tagged) / 1_000_000, (committed - written) / 1_000_000);
  }
}
