package dev.prefixguard.examples.consumer;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.Set;
import java.util.TreeMap;
import org.apache.kafka.common.TopicPartition;

/**
 * Deduplication by event id (and session + seq) and per-session order, as every subscriber needs.
 *
 * <p>{@code last} is the last applied seq per session (loaded from --state). An event ahead of its
 * turn is held, with the partition it was read from, until the seqs before it arrive or that
 * partition has been read to its end ({@link #flush}): a session's events all live in one
 * partition, so then the missing ones are not coming, and the gap is reported.
 */
final class EventOrder {
  private record Held(Map<String, Object> line, TopicPartition where, long offset) {}

  private final Map<String, Long> last;
  private final Map<String, TreeMap<Long, Held>> held = new HashMap<>();
  private final Set<String> seen = new HashSet<>();
  private int gaps;
  private boolean changed;

  EventOrder(Map<String, Long> last) {
    this.last = new HashMap<>(last);
  }

  Map<String, Long> last() {
    return last;
  }

  int gaps() {
    return gaps;
  }

  /** True once, after events were applied since the last call: the state file is due. */
  boolean takeChanged() {
    boolean was = changed;
    changed = false;
    return was;
  }

  private static String idOf(Map<String, Object> line) {
    Object ce = line.get("ce_id");
    return ce != null ? (String) ce : (String) line.get("event_id");
  }

  /** The lines to print for one usable event read at {@code where}, in order. */
  List<Map<String, Object>> offer(Map<String, Object> line, TopicPartition where, long offset) {
    String id = idOf(line);
    if (seen.contains(id)) return List.of(duplicate(line, "event_id"));
    if (!EventReader.SESSION_TOPIC.equals(line.get("topic"))) {
      seen.add(id);
      return List.of(line);
    }
    String session = (String) line.get("session_id");
    long seq = (Long) line.get("seq");
    TreeMap<Long, Held> waiting = held.computeIfAbsent(session, s -> new TreeMap<>());
    if (seq <= last.getOrDefault(session, 0L) || waiting.containsKey(seq)) {
      if (waiting.isEmpty()) held.remove(session);
      return List.of(duplicate(line, "seq"));
    }
    seen.add(id);
    waiting.put(seq, new Held(line, where, offset));
    return applyNext(session);
  }

  /** Applies the held events of {@code session} that are next in line. */
  private List<Map<String, Object>> applyNext(String session) {
    List<Map<String, Object>> out = new ArrayList<>();
    TreeMap<Long, Held> waiting = held.get(session);
    if (waiting == null) return out;
    long next = last.getOrDefault(session, 0L) + 1;
    while (waiting.containsKey(next)) {
      out.add(waiting.remove(next).line());
      last.put(session, next);
      changed = true;
      next++;
    }
    if (waiting.isEmpty()) held.remove(session);
    return out;
  }

  /** The partition was read to its end: what its sessions still wait for is not coming. */
  List<Map<String, Object>> flush(TopicPartition where) {
    List<Map<String, Object>> out = new ArrayList<>();
    for (String session : new ArrayList<>(held.keySet())) {
      TreeMap<Long, Held> waiting = held.get(session);
      if (waiting.values().stream().noneMatch(h -> h.where().equals(where))) continue;
      while (held.containsKey(session)) {
        long nextSeq = waiting.firstKey();
        Map<String, Object> gap = new LinkedHashMap<>();
        gap.put("kind", "gap");
        gap.put("topic", EventReader.SESSION_TOPIC);
        gap.put("session_id", session);
        gap.put("expected_seq", last.getOrDefault(session, 0L) + 1);
        gap.put("next_seq", nextSeq);
        out.add(gap);
        gaps++;
        last.put(session, nextSeq - 1);
        out.addAll(applyNext(session));
      }
    }
    return out;
  }

  /** The partition was taken away (a rebalance): forget what was held from it; it is read again. */
  void drop(TopicPartition where) {
    for (String session : new ArrayList<>(held.keySet())) {
      TreeMap<Long, Held> waiting = held.get(session);
      waiting.values().removeIf(h -> {
        if (!h.where().equals(where)) return false;
        seen.remove(idOf(h.line()));
        return true;
      });
      if (waiting.isEmpty()) held.remove(session);
    }
  }

  /** The partitions some held event was read from. */
  Set<TopicPartition> holding() {
    Set<TopicPartition> partitions = new HashSet<>();
    held.values().forEach(waiting -> waiting.values().forEach(h -> partitions.add(h.where())));
    return partitions;
  }

  OptionalLong lowestHeldOffset(TopicPartition where) {
    return held.values().stream()
        .flatMap(waiting -> waiting.values().stream())
        .filter(h -> h.where().equals(where))
        .mapToLong(Held::offset)
        .min();
  }

  private static Map<String, Object> duplicate(Map<String, Object> line, String reason) {
    Map<String, Object> out = new LinkedHashMap<>();
    out.put("kind", "duplicate");
    out.put("reason", reason);
    for (String key : List.of("topic", "session_id", "seq", "type", "event_id", "ce_id", "partition", "offset")) {
      if (line.containsKey(key)) out.put(key, line.get(key));
    }
    return out;
  }
}
