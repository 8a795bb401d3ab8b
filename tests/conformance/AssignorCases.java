// Runs Kafka's own server-side assignors (UniformAssignor, RangeAssignor of the group-coordinator jar) on
// the cases record_server_assignors.py writes, the way the 4.1 group coordinator calls them: the members in
// a HashMap filled in join order, each member's previous target as an unmodifiable map, the inverted
// target assignment of the previous targets. Compiled and run by record_server_assignors.py against the
// jars of $KAFKA_HOME/libs; nothing of Kafka is copied here.

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.File;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.coordinator.group.api.assignor.ConsumerGroupPartitionAssignor;
import org.apache.kafka.coordinator.group.api.assignor.GroupAssignment;
import org.apache.kafka.coordinator.group.api.assignor.MemberAssignment;
import org.apache.kafka.coordinator.group.api.assignor.SubscribedTopicDescriber;
import org.apache.kafka.coordinator.group.api.assignor.SubscriptionType;
import org.apache.kafka.coordinator.group.assignor.RangeAssignor;
import org.apache.kafka.coordinator.group.assignor.UniformAssignor;
import org.apache.kafka.coordinator.group.modern.Assignment;
import org.apache.kafka.coordinator.group.modern.GroupSpecImpl;
import org.apache.kafka.coordinator.group.modern.MemberSubscriptionAndAssignmentImpl;

public class AssignorCases {
    public static void main(String[] args) throws Exception {
        ObjectMapper mapper = new ObjectMapper();
        JsonNode input = mapper.readTree(new File(args[0]));
        ArrayNode results = mapper.createArrayNode();
        for (JsonNode c : input.get("cases")) {
            Map<Uuid, Integer> counts = new HashMap<>();
            c.get("topics").fields().forEachRemaining(e -> counts.put(Uuid.fromString(e.getKey()), e.getValue().asInt()));
            Map<String, MemberSubscriptionAndAssignmentImpl> members = new HashMap<>();
            Map<Uuid, Map<Integer, String>> inverted = new HashMap<>();
            Set<Set<Uuid>> subscriptions = new HashSet<>();
            for (JsonNode m : c.get("members")) {
                String id = m.get("id").asText();
                Set<Uuid> topics = new HashSet<>();
                for (JsonNode t : m.get("topics")) topics.add(Uuid.fromString(t.asText()));
                subscriptions.add(topics);
                Map<Uuid, Set<Integer>> previous = new HashMap<>();
                m.get("previous").fields().forEachRemaining(e -> {
                    Set<Integer> parts = new HashSet<>();
                    for (JsonNode p : e.getValue()) parts.add(p.asInt());
                    Uuid topic = Uuid.fromString(e.getKey());
                    previous.put(topic, parts);
                    for (Integer p : parts) inverted.computeIfAbsent(topic, k -> new HashMap<>()).put(p, id);
                });
                Optional<String> instance = m.get("instance").isNull() ? Optional.empty() : Optional.of(m.get("instance").asText());
                members.put(id, new MemberSubscriptionAndAssignmentImpl(Optional.empty(), instance, topics, new Assignment(previous)));
            }
            SubscriptionType type = subscriptions.size() <= 1 ? SubscriptionType.HOMOGENEOUS : SubscriptionType.HETEROGENEOUS;
            ConsumerGroupPartitionAssignor assignor = c.get("assignor").asText().equals("range") ? new RangeAssignor() : new UniformAssignor();
            SubscribedTopicDescriber describer = new SubscribedTopicDescriber() {
                public int numPartitions(Uuid topicId) { return counts.getOrDefault(topicId, -1); }
                public Set<String> racksForPartition(Uuid topicId, int partition) { return Set.of(); }
            };
            GroupAssignment assignment = assignor.assign(new GroupSpecImpl(Collections.unmodifiableMap(members), type, inverted), describer);
            ObjectNode out = mapper.createObjectNode();
            for (Map.Entry<String, MemberAssignment> e : assignment.members().entrySet()) {
                ObjectNode parts = mapper.createObjectNode();
                for (Map.Entry<Uuid, Set<Integer>> t : e.getValue().partitions().entrySet()) {
                    ArrayNode list = parts.putArray(t.getKey().toString());
                    for (Integer p : new TreeSet<>(t.getValue())) list.add(p);
                }
                out.set(e.getKey(), parts);
            }
            results.add(out);
        }
        mapper.writeValue(new File(args[1]), results);
    }
}
