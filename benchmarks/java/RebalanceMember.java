import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeSet;
import java.util.concurrent.atomic.AtomicBoolean;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
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
 * The Java client's member of benchmarks/rebalance_pause.py's group: a KafkaConsumer with
 * group.protocol=consumer (KIP-848) and a transactional KafkaProducer with sendOffsetsToTransaction,
 * the exactly-once loop of the client's documentation.
 *
 * Why: the benchmark compares how long each client's pipeline stops producing committed output when
 * the group's membership changes, so every member does the same as _rebalance_member.py's: read the
 * input (read_committed), write each record's value prefixed by NAME + ":" to the same partition of
 * the output, commit outputs and input offsets in one transaction at 500 inputs or MAX_TXN_MS after
 * the transaction's first input; SLOW=1 sleeps 1.5 s after each poll that returned records. The open
 * transaction is committed when partitions are revoked (the new owner starts at its offsets) and
 * aborted when they are lost. Events are JSON lines on stdout stamped with System.nanoTime()
 * (CLOCK_MONOTONIC on Linux, as Python's time.monotonic_ns()):
 *   {"ev": "ready", "t": ns}                         initTransactions() returned; subscribing
 *   {"ev": "assigned", "t": ns, "partitions": [..]}  the whole assignment after each change
 *   {"ev": "commit", "t": ns, "inputs": n}
 *   {"ev": "fail", "t": ns, "error": "..."}
 *   {"ev": "done", "t": ns}                          stdin closed: committed, left the group
 *
 * Usage: java -cp <kafka libs>/*:. RebalanceMember BOOTSTRAP GROUP NAME INPUT OUTPUT SLOW MAX_TXN_MS
 */
public final class RebalanceMember {
    static final int MAX_INPUTS = 500;
    static final long SLOW_MS = 1500;

    private RebalanceMember() {
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 7) {
            System.err.println("usage: RebalanceMember BOOTSTRAP GROUP NAME INPUT OUTPUT SLOW MAX_TXN_MS");
            System.exit(2);
        }
        String bootstrap = args[0];
        String group = args[1];
        String name = args[2];
        String input = args[3];
        String output = args[4];
        boolean slow = "1".equals(args[5]);
        long maxTxnNs = Long.parseLong(args[6]) * 1_000_000L;
        AtomicBoolean stop = new AtomicBoolean(false);
        Thread stdin = new Thread(() -> {
            try (BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
                in.readLine(); // any line, or the end of input, stops the member
            } catch (Exception e) {
                // the parent went away: stop as well
            }
            stop.set(true);
        });
        stdin.setDaemon(true);
        stdin.start();

        Properties cp = new Properties();
        cp.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        cp.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        cp.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, "consumer");
        cp.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        cp.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        cp.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        cp.put(ConsumerConfig.FETCH_MAX_WAIT_MS_CONFIG, "50");
        cp.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, String.valueOf(MAX_INPUTS));
        cp.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        cp.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        Properties pp = new Properties();
        pp.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        pp.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, group + "-" + name);
        pp.put(ProducerConfig.ACKS_CONFIG, "all");
        pp.put(ProducerConfig.LINGER_MS_CONFIG, "2");
        pp.put(ProducerConfig.TRANSACTION_TIMEOUT_CONFIG, "10000");
        pp.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        pp.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());

        KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(cp);
        KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(pp);
        producer.initTransactions();
        byte[] prefix = (name + ":").getBytes(StandardCharsets.UTF_8);
        Loop loop = new Loop(consumer, producer);
        emit("ready", null);
        consumer.subscribe(Collections.singletonList(input), loop);
        while (!stop.get()) {
            try {
                ConsumerRecords<byte[], byte[]> records = consumer.poll(Duration.ofMillis(50));
                if (!records.isEmpty()) {
                    if (slow) {
                        Thread.sleep(SLOW_MS);
                    }
                    if (!loop.open) {
                        producer.beginTransaction();
                        loop.open = true;
                        loop.since = System.nanoTime();
                    }
                    for (ConsumerRecord<byte[], byte[]> r : records) {
                        byte[] value = new byte[prefix.length + r.value().length];
                        System.arraycopy(prefix, 0, value, 0, prefix.length);
                        System.arraycopy(r.value(), 0, value, prefix.length, r.value().length);
                        producer.send(new ProducerRecord<>(output, r.partition(), null, value));
                        TopicPartition tp = new TopicPartition(r.topic(), r.partition());
                        loop.firsts.putIfAbsent(tp, r.offset());
                        loop.offsets.put(tp, new OffsetAndMetadata(r.offset() + 1));
                        loop.inputs++;
                    }
                }
                if (loop.open && (loop.inputs >= MAX_INPUTS || System.nanoTime() - loop.since >= maxTxnNs)) {
                    loop.commit();
                }
            } catch (Exception e) {
                emit("fail", e.getClass().getSimpleName() + ": " + e.getMessage());
                loop.abort(); // and back to the transaction's first inputs: they are processed again
            }
        }
        try {
            loop.commit();
        } catch (Exception e) {
            emit("fail", e.getClass().getSimpleName() + ": " + e.getMessage());
        }
        consumer.close(); // leaves the group
        producer.close(Duration.ofSeconds(10));
        emit("done", null);
        System.exit(0);
    }

    /** The open transaction, and the rebalance listener that finishes it before partitions go. */
    static final class Loop implements ConsumerRebalanceListener {
        final KafkaConsumer<byte[], byte[]> consumer;
        final KafkaProducer<byte[], byte[]> producer;
        final Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
        final Map<TopicPartition, Long> firsts = new HashMap<>(); // each partition's first input in the txn
        final TreeSet<Integer> owned = new TreeSet<>();
        boolean open;
        long since;
        int inputs;

        Loop(KafkaConsumer<byte[], byte[]> consumer, KafkaProducer<byte[], byte[]> producer) {
            this.consumer = consumer;
            this.producer = producer;
        }

        void commit() {
            if (!open) {
                return;
            }
            try {
                producer.sendOffsetsToTransaction(offsets, consumer.groupMetadata());
            } catch (RuntimeException e) {
                throw new RuntimeException("sendOffsetsToTransaction (member epoch "
                        + consumer.groupMetadata().generationId() + "): " + e.getMessage(), e);
            }
            producer.commitTransaction();
            emit("commit", "\"inputs\": " + inputs);
            reset();
        }

        void abort() {
            if (open) {
                try {
                    producer.abortTransaction();
                } catch (Exception e) {
                    emit("fail", "abort: " + e.getClass().getSimpleName() + ": " + e.getMessage());
                }
                for (Map.Entry<TopicPartition, Long> first : firsts.entrySet()) {
                    if (consumer.assignment().contains(first.getKey())) {
                        consumer.seek(first.getKey(), first.getValue());
                    }
                }
            }
            reset();
        }

        void reset() {
            open = false;
            inputs = 0;
            offsets.clear();
            firsts.clear();
        }

        @Override
        public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
            for (TopicPartition tp : partitions) {
                owned.add(tp.partition());
            }
            emitAssignment();
        }

        @Override
        public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
            commit(); // before the partitions go: the new owner starts at these offsets
            for (TopicPartition tp : partitions) {
                owned.remove(tp.partition());
            }
            emitAssignment();
        }

        @Override
        public void onPartitionsLost(Collection<TopicPartition> partitions) {
            abort(); // fenced: the offsets cannot be committed any more
            for (TopicPartition tp : partitions) {
                owned.remove(tp.partition());
            }
            emitAssignment();
        }

        void emitAssignment() {
            List<String> parts = new ArrayList<>();
            for (int p : owned) {
                parts.add(String.valueOf(p));
            }
            emit("assigned", "\"partitions\": [" + String.join(", ", parts) + "]");
        }
    }

    /** One event line; ``extra`` is an error message (fail) or raw JSON fields (assigned, commit). */
    static synchronized void emit(String event, String extra) {
        StringBuilder out = new StringBuilder("{\"ev\": \"").append(event).append("\", \"t\": ")
                .append(System.nanoTime());
        if (extra != null && event.equals("fail")) {
            out.append(", \"error\": \"").append(extra.replace("\\", "\\\\").replace("\"", "'")
                    .replace("\n", " ")).append('"');
        } else if (extra != null) {
            out.append(", ").append(extra);
        }
        System.out.println(out.append('}'));
        System.out.flush();
    }
}
