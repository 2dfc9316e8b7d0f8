/*
 * Kafka's own offset translation, for tests to compare ours with: runs
 * RemoteClusterUtils.translateOffsets against a cluster and prints
 * one line per translated partition, "topic<TAB>partition<TAB>offset", sorted by topic then partition.
 *
 * Run without a build step (Java 17+ single-file source launch), with the cached Kafka jars:
 *   java -cp "$HOME/.cache/mirror-sink/kafka/4.3.1/libs/*" tests/integration/java/TranslateOffsets.java \
 *       <bootstrap> <remoteClusterAlias> <group> [timeoutMs]
 *
 * Exit 0 on success; 1 with the exception on stderr on failure; 2 on bad arguments.
 * Only the result goes to stdout: System.out is pointed at stderr before Kafka's classes (and so
 * log4j2's console appender) load, and the result is printed on the original stream.
 */

import java.io.PrintStream;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.connect.mirror.RemoteClusterUtils;

public final class TranslateOffsets {
    private TranslateOffsets() {}

    public static void main(String[] args) {
        PrintStream out = System.out;
        System.setOut(System.err);
        if (args.length < 3 || args.length > 4) {
            System.err.println("usage: TranslateOffsets <bootstrap> <remoteClusterAlias> <group> [timeoutMs]");
            System.exit(2);
        }
        try {
            long timeoutMs = args.length == 4 ? Long.parseLong(args[3]) : 60_000L;
            out.print(translate(args[0], args[1], args[2], Duration.ofMillis(timeoutMs)));
            out.flush();
            System.exit(0);
        } catch (Throwable e) {
            e.printStackTrace(System.err);
            System.exit(1);
        }
    }

    // Kafka's classes are first initialised here (imports load nothing), after System.out is redirected.
    private static String translate(String bootstrap, String alias, String group, Duration timeout)
            throws Exception {
        Map<String, Object> props = new HashMap<>();
        props.put("bootstrap.servers", bootstrap);
        Map<TopicPartition, OffsetAndMetadata> offsets = RemoteClusterUtils.translateOffsets(props, alias, group, timeout);
        List<Map.Entry<TopicPartition, OffsetAndMetadata>> entries = new ArrayList<>(offsets.entrySet());
        entries.sort(Map.Entry.comparingByKey(
            Comparator.comparing(TopicPartition::topic).thenComparingInt(TopicPartition::partition)));
        StringBuilder sb = new StringBuilder();
        for (var e : entries) {
            sb.append(e.getKey().topic()).append('\t').append(e.getKey().partition()).append('\t')
                .append(e.getValue().offset()).append('\n');
        }
        return sb.toString();
    }
}
