import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.Properties;
import java.util.Random;
import java.util.concurrent.atomic.AtomicBoolean;

import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * The Java client's side of benchmarks/failover.py: a steady stream of transactions (begin, send
 * RECORDS_PER_TXN records, commit), one every INTERVAL_MS at most, until stdin closes.
 *
 * Why: the failover benchmark asks how long each client's commits stop while a broker is killed or
 * frozen. Every event is one JSON line on stdout stamped with System.nanoTime(), which on Linux is
 * CLOCK_MONOTONIC like Python's time.monotonic_ns(), so the harness puts every client's commits and
 * its own faults on one time line:
 *   {"ev": "ready", "t": ns}            initTransactions() returned
 *   {"ev": "commit", "t": ns}           commitTransaction() returned
 *   {"ev": "fail", "t": ns, "error": "..."}  the transaction failed (send, commit): aborted, or the
 *                                       producer closed and a new one initialized after a fatal error
 *   {"ev": "done", "t": ns}
 * The client keeps its defaults (request.timeout.ms 30 s, delivery.timeout.ms 120 s, max.block.ms
 * 60 s) besides acks=all and linger.ms=5, as the other clients do.
 *
 * Usage: java -cp <kafka libs>/*:. TxnStream BOOTSTRAP TOPIC TRANSACTIONAL_ID RECORDS_PER_TXN INTERVAL_MS
 */
public final class TxnStream {
    private TxnStream() {
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 5) {
            System.err.println("usage: TxnStream BOOTSTRAP TOPIC TRANSACTIONAL_ID RECORDS_PER_TXN INTERVAL_MS");
            System.exit(2);
        }
        String bootstrap = args[0];
        String topic = args[1];
        String txnId = args[2];
        int perTxn = Integer.parseInt(args[3]);
        long intervalNs = Long.parseLong(args[4]) * 1_000_000L;
        AtomicBoolean stop = new AtomicBoolean(false);
        Thread stdin = new Thread(() -> {
            try (BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
                while (in.readLine() != null) {
                    // any line, or the end of input, stops the stream
                    break;
                }
            } catch (Exception e) {
                // the parent went away: stop as well
            }
            stop.set(true);
        });
        stdin.setDaemon(true);
        stdin.start();

        byte[] payload = new byte[100];
        new Random().nextBytes(payload);
        KafkaProducer<byte[], byte[]> producer = open(bootstrap, txnId);
        emit("ready", null);
        long next = System.nanoTime();
        while (!stop.get()) {
            long now = System.nanoTime();
            if (now < next) {
                Thread.sleep((next - now) / 1_000_000L, (int) ((next - now) % 1_000_000L));
            }
            next = Math.max(next + intervalNs, System.nanoTime());
            try {
                producer.beginTransaction();
                for (int i = 0; i < perTxn; i++) {
                    producer.send(new ProducerRecord<>(topic, payload));
                }
                producer.commitTransaction();
                emit("commit", null);
            } catch (Exception e) {
                emit("fail", e.getClass().getSimpleName() + ": " + e.getMessage());
                try {
                    producer.abortTransaction();
                } catch (Exception fatal) {
                    // fenced, or the abort itself cannot go on: a new instance, as an application would
                    emit("fail", "abort: " + fatal.getClass().getSimpleName() + ": " + fatal.getMessage());
                    producer.close(java.time.Duration.ofSeconds(5));
                    producer = open(bootstrap, txnId);
                }
            }
        }
        producer.close(java.time.Duration.ofSeconds(30));
        emit("done", null);
    }

    static KafkaProducer<byte[], byte[]> open(String bootstrap, String txnId) {
        Properties props = new Properties();
        props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, txnId);
        props.put(ProducerConfig.ACKS_CONFIG, "all");
        props.put(ProducerConfig.LINGER_MS_CONFIG, "5");
        props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(props);
        producer.initTransactions();
        return producer;
    }

    static synchronized void emit(String event, String error) {
        StringBuilder out = new StringBuilder("{\"ev\": \"").append(event).append("\", \"t\": ")
                .append(System.nanoTime());
        if (error != null) {
            out.append(", \"error\": \"").append(error.replace("\\", "\\\\").replace("\"", "'")
                    .replace("\n", " ")).append('"');
        }
        System.out.println(out.append('}'));
        System.out.flush();
    }
}
