package dev.prefixguard.examples.consumer;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.StringDeserializer;

/**
 * A subscriber of prefix-guard's topics in Java: kafka-clients for Kafka, protobuf-java with classes
 * that protoc generated from the committed .proto files. Prints one JSON line per event (README.md).
 *
 * <p>What every subscriber must do, and this one shows: deduplicate (an event is applied once by its
 * id, the {@code ce_id} header, which is the envelope's event_id; session events also by session +
 * seq); keep per-session order (seq 1, 2, 3 ..., an event ahead of its turn held until the missing
 * ones arrive or its partition was read to the end, then the gap reported); commit a partition's
 * position only up to what was applied, after the last applied seqs were saved (--state).
 *
 * <p>Exit status: 0 at the end with --until-end, on an idle --timeout without it, or on SIGINT/SIGTERM;
 * 2 for bad usage; 3 when --timeout passed before the end was reached; 4 for a Kafka error; 6 when a
 * gap was reported.
 */
public final class ConsumeEvents {
  private static final String USAGE = "usage: java -jar prefix-guard-java-consumer.jar [--bootstrap host:port,...]"
      + " [--topics t1,t2] [--topic-prefix P] [--group G] [--state FILE] [--until-end] [--timeout S]";

  private record Options(String bootstrap, List<String> topics, String topicPrefix, String group, Path state,
      boolean untilEnd, double timeoutSeconds) {}

  private ConsumeEvents() {}

  public static void main(String[] argv) {
    Options options;
    try {
      options = parse(argv);
    } catch (IllegalArgumentException error) {
      System.err.println(error.getMessage() + "\n" + USAGE);
      System.exit(2);
      return;
    }
    Map<String, Long> last;
    try {
      last = loadState(options.state());
    } catch (IOException | IllegalArgumentException error) {
      System.err.println("--state: " + error.getMessage());
      System.exit(2);
      return;
    }
    System.exit(run(options, new EventOrder(last)));
  }

  private static Options parse(String[] argv) {
    String bootstrap = System.getenv().getOrDefault("KAFKA_BROKERS", "127.0.0.1:9092");
    String topics = String.join(",", EventReader.TOPICS);
    String prefix = "";
    String group = "java-prefix-guard-example";
    Path state = null;
    boolean untilEnd = false;
    double timeout = 0;
    for (int i = 0; i < argv.length; i++) {
      String name = argv[i];
      if (name.equals("--until-end")) {
        untilEnd = true;
        continue;
      }
      if (i + 1 >= argv.length) throw new IllegalArgumentException(name + ": a value is needed");
      String value = argv[++i];
      switch (name) {
        case "--bootstrap" -> bootstrap = value;
        case "--topics" -> topics = value;
        case "--topic-prefix" -> prefix = value;
        case "--group" -> group = value;
        case "--state" -> state = Path.of(value);
        case "--timeout" -> {
          try {
            timeout = Double.parseDouble(value);
          } catch (NumberFormatException error) {
            timeout = -1;
          }
          if (!(timeout >= 0) || Double.isInfinite(timeout)) {
            throw new IllegalArgumentException("--timeout must be seconds >= 0, got " + value);
          }
        }
        default -> throw new IllegalArgumentException("unknown option " + name);
      }
    }
    List<String> chosen = new ArrayList<>();
    for (String topic : topics.split(",")) {
      String trimmed = topic.trim();
      if (!EventReader.TOPICS.contains(trimmed)) {
        throw new IllegalArgumentException("--topics: unknown " + trimmed + "; known: " + String.join(", ", EventReader.TOPICS));
      }
      chosen.add(trimmed);
    }
    return new Options(bootstrap, chosen, prefix, group, state, untilEnd, timeout);
  }

  /** Last applied seq per session, one {@code <seq> <session id>} line each; no file yet is an empty state. */
  private static Map<String, Long> loadState(Path path) throws IOException {
    Map<String, Long> last = new HashMap<>();
    if (path == null || !Files.exists(path)) return last;
    List<String> lines = Files.readAllLines(path, StandardCharsets.UTF_8);
    for (int i = 0; i < lines.size(); i++) {
      String text = lines.get(i);
      if (text.isEmpty()) continue;
      int space = text.indexOf(' ');
      if (space <= 0 || space == text.length() - 1 || !text.substring(0, space).chars().allMatch(Character::isDigit)) {
        throw new IllegalArgumentException(path + ":" + (i + 1) + ": expected '<seq> <session id>', got '" + text + "'");
      }
      last.put(text.substring(space + 1), Long.parseLong(text.substring(0, space)));
    }
    return last;
  }

  /** Written whole and renamed into place, before positions are committed, so it is never behind them. */
  private static void saveState(Path path, Map<String, Long> last) throws IOException {
    StringBuilder text = new StringBuilder();
    new TreeMap<>(last).forEach((session, seq) -> text.append(seq).append(' ').append(session).append('\n'));
    Path tmp = path.resolveSibling(path.getFileName() + ".tmp");
    Files.writeString(tmp, text, StandardCharsets.UTF_8);
    Files.move(tmp, path, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
  }

  private static int run(Options options, EventOrder order) {
    Map<String, String> logical = new LinkedHashMap<>();
    options.topics().forEach(topic -> logical.put(options.topicPrefix() + topic, topic));
    Properties config = new Properties();
    config.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, options.bootstrap());
    config.put(ConsumerConfig.GROUP_ID_CONFIG, options.group());
    config.put(ConsumerConfig.CLIENT_ID_CONFIG, options.group());
    // A group with no committed position reads the topics' history.
    config.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
    // Positions are committed by this code, never past a held event.
    config.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
    PrintStream out = new PrintStream(System.out, false, StandardCharsets.UTF_8);

    KafkaConsumer<String, byte[]> consumer =
        new KafkaConsumer<>(config, new StringDeserializer(), new ByteArrayDeserializer());
    Thread main = Thread.currentThread();
    Thread hook = new Thread(() -> {
      // SIGINT/SIGTERM: wake the poll, then let main commit and close before the JVM exits.
      consumer.wakeup();
      try {
        main.join(10_000);
      } catch (InterruptedException ignored) {
        Thread.currentThread().interrupt();
      }
    });
    Runtime.getRuntime().addShutdownHook(hook);

    // --until-end: each assigned partition's end offset when it was assigned.
    Map<TopicPartition, Long> endAtAssignment = new HashMap<>();
    Map<TopicPartition, Long> nextOffset = new HashMap<>();
    consumer.subscribe(logical.keySet(), new ConsumerRebalanceListener() {
      @Override
      public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
        partitions.forEach(order::drop);
        partitions.forEach(endAtAssignment::remove);
      }

      @Override
      public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
        endAtAssignment.putAll(consumer.endOffsets(partitions));
      }
    });

    int status = 0;
    long lastRecordAt = System.nanoTime();
    boolean interrupted = false;
    try {
      while (true) {
        ConsumerRecords<String, byte[]> records = consumer.poll(Duration.ofMillis(500));
        Set<TopicPartition> touched = new HashSet<>();
        for (ConsumerRecord<String, byte[]> record : records) {
          TopicPartition where = new TopicPartition(record.topic(), record.partition());
          Map<String, Object> line = EventReader.describe(logical.get(record.topic()), record);
          if (line != null) print(out, order.offer(line, where, record.offset()));
          nextOffset.put(where, record.offset() + 1);
          touched.add(where);
        }
        if (!records.isEmpty()) lastRecordAt = System.nanoTime();
        // A session's events all live in one partition: read to its end, what a session waits for is not coming.
        for (TopicPartition where : order.holding()) {
          if (atEnd(consumer, where)) {
            print(out, order.flush(where));
            touched.add(where);
          }
        }
        commit(consumer, order, options.state(), nextOffset, touched);
        if (options.untilEnd() && !endAtAssignment.isEmpty() && consumer.assignment().stream()
            .allMatch(where -> consumer.position(where) >= endAtAssignment.getOrDefault(where, Long.MAX_VALUE))) {
          break;
        }
        if (options.timeoutSeconds() > 0 && System.nanoTime() - lastRecordAt > options.timeoutSeconds() * 1e9) {
          if (options.untilEnd()) {
            System.err.println("timed out after " + options.timeoutSeconds() + "s idle before the end");
            status = 3;
          }
          break;
        }
      }
    } catch (WakeupException stopped) {
      interrupted = true;
    } catch (KafkaException | IOException error) {
      System.err.println("kafka error: " + error.getMessage());
      status = 4;
    } finally {
      consumer.close();
      out.flush();
    }
    if (!interrupted) Runtime.getRuntime().removeShutdownHook(hook);
    return status == 0 && order.gaps() > 0 ? 6 : status;
  }

  private static boolean atEnd(KafkaConsumer<String, byte[]> consumer, TopicPartition where) {
    OptionalLong lag = consumer.currentLag(where);
    if (lag.isPresent()) return lag.getAsLong() == 0;
    Long end = consumer.endOffsets(List.of(where)).get(where);
    return end != null && consumer.position(where) >= end;
  }

  private static void commit(KafkaConsumer<String, byte[]> consumer, EventOrder order, Path state,
      Map<TopicPartition, Long> nextOffset, Set<TopicPartition> touched) throws IOException {
    if (touched.isEmpty()) return;
    Map<TopicPartition, OffsetAndMetadata> positions = new HashMap<>();
    for (TopicPartition where : touched) {
      OptionalLong held = order.lowestHeldOffset(where);
      Long position = held.isPresent() ? Long.valueOf(held.getAsLong()) : nextOffset.get(where);
      if (position != null) positions.put(where, new OffsetAndMetadata(position));
    }
    if (order.takeChanged() && state != null) saveState(state, order.last());
    consumer.commitSync(positions);
  }

  private static void print(PrintStream out, List<Map<String, Object>> lines) {
    for (Map<String, Object> line : lines) out.println(Json.write(line));
    out.flush();
  }
}
