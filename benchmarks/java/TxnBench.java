import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Properties;
import java.util.Random;

import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * The Java client's side of benchmarks S1-S3: the same loop as txnproducer.perf.run_workload
 * (begin, send N records of one random payload, commit, time the commit), the same settings
 * (acks=all, linger.ms=5, everything else the client's defaults), one JSON object on stdout
 * with the keys compare.py reads.
 *
 * Why it exists: the issue's targets were set against kafka-python and confluent-kafka, with the
 * Java client as the reference of what a client can do against the broker. Measured in the same
 * run, on the same broker and CPUs, it shows how much of a scenario is the broker's time and how
 * much is the client's.
 *
 * WARMUP_SECONDS of the same loop run first, untimed: the JVM compiles the client's hot paths
 * during its first seconds, a cost a long-running application pays once (like init, which is
 * not timed for any client). txnproducer and the other Python clients have no JIT to warm.
 *
 * WARMUP_TRANSACTIONS more of them after that (compare.py --warmup-transactions: the JVM needs
 * about 6,000 small transactions before its CPU per transaction settles). SPREAD > 0 sends record i
 * of a transaction to partition i % SPREAD (S6); 0 leaves it to the partitioner.
 *
 * Usage: java -cp <kafka libs>/*:. TxnBench BOOTSTRAP TOPIC RECORDS_PER_TXN NUM_RECORDS
 *        MAX_SECONDS RECORD_SIZE [WARMUP_SECONDS [BATCH_SIZE|- [WARMUP_TRANSACTIONS [SPREAD]]]]
 */
public final class TxnBench {
    private TxnBench() {
    }

    /** Record {@code i} of a transaction: to partition {@code i % spread}, or the partitioner's choice. */
    private static ProducerRecord<byte[], byte[]> record(String topic, byte[] payload, int spread, int i) {
        return spread > 0 ? new ProducerRecord<>(topic, i % spread, null, payload)
                : new ProducerRecord<>(topic, payload);
    }

    public static void main(String[] args) throws Exception {
        if (args.length < 6 || args.length > 10) {
            System.err.println("usage: TxnBench BOOTSTRAP TOPIC RECORDS_PER_TXN NUM_RECORDS MAX_SECONDS "
                    + "RECORD_SIZE [WARMUP_SECONDS [BATCH_SIZE|- [WARMUP_TRANSACTIONS [SPREAD]]]]");
            System.exit(2);
        }
        String bootstrap = args[0];
        String topic = args[1];
        int perTxn = Integer.parseInt(args[2]);
        int numRecords = Integer.parseInt(args[3]);
        double maxSeconds = Double.parseDouble(args[4]);
        int recordSize = Integer.parseInt(args[5]);
        double warmupSeconds = args.length >= 7 ? Double.parseDouble(args[6]) : 0.0;
        String batchSize = args.length >= 8 && !args[7].equals("-") ? args[7] : null;  // null: the default
        long warmupTransactions = args.length >= 9 ? Long.parseLong(args[8]) : 0;
        int spread = args.length >= 10 ? Integer.parseInt(args[9]) : 0;

        Properties props = new Properties();
        props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG,
                "bench-java-" + Long.toHexString(new Random().nextLong()));
        props.put(ProducerConfig.ACKS_CONFIG, "all");
        props.put(ProducerConfig.LINGER_MS_CONFIG, "5");
        if (batchSize != null) {
            props.put(ProducerConfig.BATCH_SIZE_CONFIG, batchSize);
        }
        props.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, "60000");
        props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());

        byte[] payload = new byte[recordSize];
        new Random().nextBytes(payload);
        List<Double> latencies = new ArrayList<>();
        long sent = 0;
        long transactions = 0;
        double initS;
        double elapsedS;
        double cpuS;
        double appCpuS;
        var threads = ManagementFactory.getThreadMXBean();
        var os = (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(props)) {
            long t0 = System.nanoTime();
            producer.initTransactions();
            initS = (System.nanoTime() - t0) / 1e9;
            long warmupEnd = System.nanoTime() + (long) (warmupSeconds * 1e9);
            for (long t = 0; System.nanoTime() < warmupEnd || t < warmupTransactions; t++) {
                producer.beginTransaction();
                for (int i = 0; i < perTxn; i++) {
                    producer.send(record(topic, payload, spread, i));
                }
                producer.commitTransaction();
            }
            long cpuStart = os.getProcessCpuTime();
            long appCpuStart = threads.getCurrentThreadCpuTime();
            long start = System.nanoTime();
            long deadline = start + (long) (maxSeconds * 1e9);
            while (sent < numRecords) {
                producer.beginTransaction();
                long limit = Math.min(perTxn, numRecords - sent);
                for (int i = 0; i < limit; i++) {
                    producer.send(record(topic, payload, spread, i));
                }
                long commitStart = System.nanoTime();
                producer.commitTransaction();
                long now = System.nanoTime();
                latencies.add((now - commitStart) / 1e6);
                sent += limit;
                transactions++;
                if (now >= deadline) {
                    break;
                }
            }
            elapsedS = (System.nanoTime() - start) / 1e9;
            cpuS = (os.getProcessCpuTime() - cpuStart) / 1e9;
            appCpuS = (threads.getCurrentThreadCpuTime() - appCpuStart) / 1e9;
        }
        long peakRss = peakRssBytes();
        double[] ordered = latencies.stream().mapToDouble(Double::doubleValue).sorted().toArray();
        StringBuilder out = new StringBuilder("{");
        field(out, "client", "\"java\"");
        field(out, "records", Long.toString(sent));
        field(out, "transactions", Long.toString(transactions));
        field(out, "record_size", Integer.toString(recordSize));
        field(out, "warmup_s", num(warmupSeconds));
        field(out, "elapsed_s", num(elapsedS));
        field(out, "init_s", num(initS));
        field(out, "cpu_s", num(cpuS));
        field(out, "app_cpu_s", num(appCpuS));
        field(out, "records_per_s", num(sent / elapsedS));
        field(out, "mb_per_s", num(sent * (double) recordSize / elapsedS / (1024.0 * 1024.0)));
        field(out, "transactions_per_s", num(transactions / elapsedS));
        field(out, "cpu_us_per_record", num(sent > 0 ? cpuS / sent * 1e6 : 0.0));
        field(out, "cpu_us_per_transaction", num(transactions > 0 ? cpuS / transactions * 1e6 : 0.0));
        field(out, "app_cpu_us_per_record", num(sent > 0 ? appCpuS / sent * 1e6 : 0.0));
        field(out, "peak_rss_bytes", Long.toString(peakRss));
        field(out, "peak_rss_mib", num(peakRss / (1024.0 * 1024.0)));
        field(out, "commit_latency_ms", String.format(Locale.ROOT,
                "{\"count\": %d, \"mean\": %s, \"p50\": %s, \"p95\": %s, \"p99\": %s, \"max\": %s}",
                ordered.length, num(Arrays.stream(ordered).average().orElse(Double.NaN)),
                num(percentile(ordered, 50)), num(percentile(ordered, 95)),
                num(percentile(ordered, 99)), num(ordered.length > 0 ? ordered[ordered.length - 1] : Double.NaN)));
        out.setLength(out.length() - 2);
        out.append("}");
        System.out.println(out);
    }

    /** Linear interpolation between closest ranks, as txnproducer.perf.percentile. */
    static double percentile(double[] sorted, double q) {
        int n = sorted.length;
        if (n == 0) {
            return Double.NaN;
        }
        if (n == 1) {
            return sorted[0];
        }
        double rank = (n - 1) * q / 100.0;
        int low = (int) Math.floor(rank);
        int high = Math.min(low + 1, n - 1);
        return sorted[low] + (sorted[high] - sorted[low]) * (rank - low);
    }

    /** VmHWM, as txnproducer.perf.peak_rss_bytes reads it on Linux; 0 elsewhere. */
    static long peakRssBytes() {
        try {
            for (String line : Files.readAllLines(Path.of("/proc/self/status"), StandardCharsets.US_ASCII)) {
                if (line.startsWith("VmHWM:")) {
                    String[] parts = line.trim().split("\\s+");
                    return Long.parseLong(parts[1]) * 1024;
                }
            }
        } catch (Exception e) {
            return 0;
        }
        return 0;
    }

    static String num(double value) {
        return Double.isNaN(value) || Double.isInfinite(value) ? "null" : String.format(Locale.ROOT, "%.6f", value);
    }

    static void field(StringBuilder out, String key, String value) {
        out.append('"').append(key).append("\": ").append(value).append(", ");
    }
}
