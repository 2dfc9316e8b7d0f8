import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;

import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * Kafka's own Java producer writing transactions that span partitions and topics: the 4.x client
 * speaks transactions version 2 (KIP-890) to a 4.x broker, where librdkafka speaks version 1.
 *
 * Args: bootstrap transactionalId transactions abortEvery topic:partitions [topic:partitions ...]
 * Transaction i writes one record to each of 2 + (i % 3) partitions, chosen round robin over all the
 * topics' partitions, and aborts when abortEvery > 0 and (i + 1) % abortEvery == 0. One line per
 * transaction on stdout, after "TXN ": "commit" or "abort", then topic:partition:offset of each
 * record; or "unknown" when the broker refused it and its outcome cannot be told here.
 */
public class TransactionalWriter {
    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        String transactionalId = args[1];
        int transactions = Integer.parseInt(args[2]);
        int abortEvery = Integer.parseInt(args[3]);
        List<String[]> slots = new ArrayList<>();
        for (int a = 4; a < args.length; a++) {
            String[] spec = args[a].split(":");
            for (int p = 0; p < Integer.parseInt(spec[1]); p++) {
                slots.add(new String[] {spec[0], Integer.toString(p)});
            }
        }
        Properties props = new Properties();
        props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, transactionalId);
        props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        props.put(ProducerConfig.LINGER_MS_CONFIG, "0");
        int next = 0;
        KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(props);
        producer.initTransactions();
        for (int i = 0; i < transactions; i++) {
            int width = 2 + (i % 3);
            boolean abort = abortEvery > 0 && (i + 1) % abortEvery == 0;
            List<Future<RecordMetadata>> sent = new ArrayList<>();
            StringBuilder line = new StringBuilder();
            try {
                producer.beginTransaction();
                for (int w = 0; w < width; w++) {
                    String[] slot = slots.get(next++ % slots.size());
                    byte[] value = (transactionalId + "-" + i + "-" + w).getBytes();
                    sent.add(producer.send(new ProducerRecord<>(slot[0], Integer.parseInt(slot[1]), null, value)));
                }
                if (abort) {
                    producer.flush();
                    producer.abortTransaction();
                    line.append("abort");
                } else {
                    producer.commitTransaction();
                    line.append("commit");
                }
                for (Future<RecordMetadata> f : sent) {
                    RecordMetadata m = f.get();
                    line.append(' ').append(m.topic()).append(':').append(m.partition()).append(':').append(m.offset());
                }
            } catch (KafkaException | ExecutionException e) {
                // The broker refused the transaction (a loaded machine: INVALID_TXN_STATE while the last
                // one's markers are written, say): its outcome is not known here, so say so and go on
                // with a new producer (its InitProducerId ends whatever was left open).
                System.err.println("transaction " + i + ": " + e);
                line.setLength(0);
                line.append("unknown");
                producer.close();
                producer = new KafkaProducer<>(props);
                producer.initTransactions();
            }
            System.out.println("TXN " + line);
        }
        producer.close();
    }
}
