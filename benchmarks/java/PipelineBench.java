import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import java.util.Random;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * The Java client's side of compare.py's read-side scenarios, printing the keys compare.py reads:
 *
 * <ul>
 * <li>S4 ("ctp"): the consume-transform-produce loop a Java application writes - a read_committed
 * KafkaConsumer in a fresh group (max.poll.records=1000) polls, every value is upper-cased (ASCII, as
 * Python's bytes.upper()) and sent by a transactional KafkaProducer, the consumer's positions go into
 * the transaction with sendOffsetsToTransaction(offsets, consumer.groupMetadata()), commit; until
 * NUM_RECORDS inputs are committed. acks=all, linger.ms=5, the clients' defaults otherwise.</li>
 * <li>S5 ("read"): every committed record of a topic read from the beginning with read_committed
 * (assign + seekToBeginning, max.poll.records=10000).</li>
 * </ul>
 *
 * WARMUP_SECONDS of the same loop run first, untimed (another group and transactional id for S4; for
 * S5 the same read, then a seek back to the beginning): the JVM compiles the clients' hot paths during
 * its first seconds. Timing, as for the Python clients: from the first poll that returned records to
 * the last commit (S4) or the last record (S5); CPU is the whole process's (JIT and GC threads too).
 *
 * Usage: java -cp <kafka libs>/*:. PipelineBench ctp|read BOOTSTRAP INPUT_TOPIC OUTPUT_TOPIC
 *        NUM_RECORDS MAX_SECONDS RECORD_SIZE PARTITIONS WARMUP_SECONDS
 */
public final class PipelineBench {
    private PipelineBench() {
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 9) {
            System.err.println("usage: PipelineBench ctp|read BOOTSTRAP INPUT OUTPUT NUM_RECORDS MAX_SECONDS "
                    + "RECORD_SIZE PARTITIONS WARMUP_SECONDS");
            System.exit(2);
        }
        String mode = args[0];
        String bootstrap = args[1];
        String input = args[2];
        String output = args[3];
        long numRecords = Long.parseLong(args[4]);
        double maxSeconds = Double.parseDouble(args[5]);
        int recordSize = Integer.parseInt(args[6]);
        int partitions = Integer.parseInt(args[7]);
        double warmupSeconds = Double.parseDouble(args[8]);
        Result result;
        if (mode.equals("ctp")) {
            if (warmupSeconds > 0) {
                pipeline(bootstrap, input, output, Long.MAX_VALUE, warmupSeconds, new Result());
            }
            result = new Result();
            pipeline(bootstrap, input, output, numRecords, maxSeconds, result);
        } else if (mode.equals("read")) {
            result = read(bootstrap, input, partitions, numRecords, maxSeconds, warmupSeconds);
        } else {
            throw new IllegalArgumentException("mode must be ctp or read, got " + mode);
        }
        result.print(recordSize, warmupSeconds);
    }

    /** What a run measured (the clock starts at the first poll that returned records). */
    static final class Result {
        long records;
        long transactions;
        long start = -1;
        long cpuStart;
        double elapsedS;
        double cpuS;
        final List<Double> latencies = new ArrayList<>();
        final com.sun.management.OperatingSystemMXBean os =
                (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();

        void firstRecords() {
            if (start < 0) {
                start = System.nanoTime();
                cpuStart = os.getProcessCpuTime();
            }
        }

        boolean late(double maxSeconds) {
            return start >= 0 && (System.nanoTime() - start) / 1e9 > maxSeconds;
        }

        void stop() {
            if (start >= 0) {
                elapsedS = (System.nanoTime() - start) / 1e9;
                cpuS = (os.getProcessCpuTime() - cpuStart) / 1e9;
            }
        }

        void print(int recordSize, double warmupSeconds) {
            long peakRss = peakRssBytes();
            double[] ordered = latencies.stream().mapToDouble(Double::doubleValue).sorted().toArray();
            StringBuilder out = new StringBuilder("{");
            field(out, "client", "\"java\"");
            field(out, "records", Long.toString(records));
            field(out, "transactions", Long.toString(transactions));
            field(out, "record_size", Integer.toString(recordSize));
            field(out, "warmup_s", num(warmupSeconds));
            field(out, "elapsed_s", num(elapsedS));
            field(out, "cpu_s", num(cpuS));
            field(out, "records_per_s", num(elapsedS > 0 ? records / elapsedS : 0.0));
            field(out, "transactions_per_s", num(elapsedS > 0 ? transactions / elapsedS : 0.0));
            field(out, "cpu_us_per_record", num(records > 0 ? cpuS / records * 1e6 : 0.0));
            field(out, "cpu_us_per_transaction", num(transactions > 0 ? cpuS / transactions * 1e6 : 0.0));
            field(out, "peak_rss_bytes", Long.toString(peakRss));
            field(out, "peak_rss_mib", num(peakRss / (1024.0 * 1024.0)));
            field(out, "commit_latency_ms", String.format(Locale.ROOT,
                    "{\"count\": %d, \"mean\": %s, \"p50\": %s, \"p95\": %s, \"p99\": %s, \"max\": %s}",
                    ordered.length, num(Arrays.stream(ordered).average().orElse(Double.NaN)),
                    num(TxnBench.percentile(ordered, 50)), num(TxnBench.percentile(ordered, 95)),
                    num(TxnBench.percentile(ordered, 99)),
                    num(ordered.length > 0 ? ordered[ordered.length - 1] : Double.NaN)));
            out.setLength(out.length() - 2);
            out.append("}");
            System.out.println(out);
        }
    }

    static byte[] upper(byte[] value) {
        byte[] out = new byte[value.length];
        for (int i = 0; i < value.length; i++) {
            byte b = value[i];
            out[i] = b >= 'a' && b <= 'z' ? (byte) (b - 32) : b;
        }
        return out;
    }

    static String tag() {
        return Long.toHexString(new Random().nextLong());
    }

    /** S4's loop until numRecords inputs are committed or maxSeconds after the first records. */
    static void pipeline(String bootstrap, String input, String output, long numRecords, double maxSeconds,
                         Result result) {
        Properties cp = new Properties();
        cp.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        cp.put(ConsumerConfig.GROUP_ID_CONFIG, "bench-s4-java-" + tag());
        cp.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        cp.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        cp.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        cp.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, "1000");
        cp.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        cp.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        Properties pp = new Properties();
        pp.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        pp.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, "bench-s4-java-" + tag());
        pp.put(ProducerConfig.ACKS_CONFIG, "all");
        pp.put(ProducerConfig.LINGER_MS_CONFIG, "5");
        pp.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, "60000");
        pp.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        pp.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        long hardDeadline = System.nanoTime() + (long) ((maxSeconds + 60) * 1e9);
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(cp);
             KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(pp)) {
            producer.initTransactions();
            consumer.subscribe(List.of(input));
            while (result.records < numRecords && System.nanoTime() < hardDeadline) {
                ConsumerRecords<byte[], byte[]> polled = consumer.poll(Duration.ofMillis(1000));
                if (polled.isEmpty()) {
                    continue;
                }
                result.firstRecords();
                producer.beginTransaction();
                for (ConsumerRecord<byte[], byte[]> record : polled) {
                    producer.send(new ProducerRecord<>(output, upper(record.value())));
                }
                Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
                for (TopicPartition tp : polled.partitions()) {
                    offsets.put(tp, new OffsetAndMetadata(consumer.position(tp)));
                }
                producer.sendOffsetsToTransaction(offsets, consumer.groupMetadata());
                long commitStart = System.nanoTime();
                producer.commitTransaction();
                result.latencies.add((System.nanoTime() - commitStart) / 1e6);
                result.records += polled.count();
                result.transactions++;
                if (result.late(maxSeconds)) {
                    break;
                }
            }
            result.stop();
        }
    }

    /** S5: read the committed records from the beginning, after a warm-up read of the same. */
    static Result read(String bootstrap, String topic, int partitions, long numRecords, double maxSeconds,
                       double warmupSeconds) {
        Properties cp = new Properties();
        cp.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        cp.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        cp.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        cp.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        cp.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, "10000");
        cp.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        cp.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        List<TopicPartition> parts = new ArrayList<>();
        for (int p = 0; p < partitions; p++) {
            parts.add(new TopicPartition(topic, p));
        }
        Result result = new Result();
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(cp)) {
            consumer.assign(parts);
            long warmupEnd = System.nanoTime() + (long) (warmupSeconds * 1e9);
            long seen = 0;
            while (System.nanoTime() < warmupEnd && seen < numRecords) {
                seen += consumer.poll(Duration.ofMillis(200)).count();
            }
            consumer.seekToBeginning(parts);
            long hardDeadline = System.nanoTime() + (long) ((maxSeconds + 60) * 1e9);
            while (result.records < numRecords && System.nanoTime() < hardDeadline) {
                ConsumerRecords<byte[], byte[]> polled = consumer.poll(Duration.ofMillis(1000));
                if (polled.isEmpty()) {
                    continue;
                }
                result.firstRecords();
                result.records += polled.count();
                if (result.late(maxSeconds)) {
                    break;
                }
            }
            result.stop();
        }
        return result;
    }

    static long peakRssBytes() {
        return TxnBench.peakRssBytes();
    }

    static String num(double value) {
        return TxnBench.num(value);
    }

    static void field(StringBuilder out, String key, String value) {
        TxnBench.field(out, key, value);
    }
}
