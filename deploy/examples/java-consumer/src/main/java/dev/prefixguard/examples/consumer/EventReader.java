package dev.prefixguard.examples.consumer;

import com.google.protobuf.InvalidProtocolBufferException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.Supplier;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.header.Header;
import prefixguard.common.v1.Common.ContentPart;
import prefixguard.events.v1.CollapseEvents.CacheCollapseEvent;
import prefixguard.events.v1.CollapseEvents.CacheCollapsed;
import prefixguard.events.v1.PrefixEvents.FingerprintObserved;
import prefixguard.events.v1.PrefixEvents.PrefixChanged;
import prefixguard.events.v1.PrefixEvents.PrefixEvent;
import prefixguard.events.v1.SessionEvents.CompactionCommitted;
import prefixguard.events.v1.SessionEvents.MessageSaved;
import prefixguard.events.v1.SessionEvents.SessionCreated;
import prefixguard.events.v1.SessionEvents.SessionEvent;
import prefixguard.events.v1.UsageEvents.LlmUsageEvent;
import prefixguard.events.v1.UsageEvents.UsageRecorded;

/**
 * Decodes one record of a subscriber topic with the protoc-generated classes into the line the
 * consumer prints: the envelope's fields, where it was read, its CloudEvents attributes (ce_* headers)
 * and a short summary of the payload (ids, enum names, counts; never message texts).
 */
final class EventReader {
  static final String SESSION_TOPIC = "session.events.v1";
  static final List<String> TOPICS = List.of(SESSION_TOPIC, "prompt.prefix.v1", "llm.usage.v1", "cache.collapse.v1");

  // Oneof case (the proto field name) -> the envelope's `type`, as the producers write it.
  private static final Map<String, Map<String, String>> TYPE_NAMES = Map.of(
      SESSION_TOPIC, Map.of(
          "session_created", "SessionCreated",
          "message_saved", "MessageSaved",
          "message_deleted", "MessageDeleted",
          "compaction_committed", "CompactionCommitted",
          "session_deleted", "SessionDeleted",
          "side_task_promoted", "SideTaskPromoted"),
      "prompt.prefix.v1", Map.of("observed", "FingerprintObserved", "changed", "PrefixChanged"),
      "llm.usage.v1", Map.of("usage", "UsageRecorded"),
      "cache.collapse.v1", Map.of("collapsed", "CacheCollapsed"));
  // Session events: 1 has content in plaintext fields, 2 seals it.
  private static final Map<String, List<Integer>> SCHEMA_VERSIONS = Map.of(
      SESSION_TOPIC, List.of(1, 2), "prompt.prefix.v1", List.of(1), "llm.usage.v1", List.of(1),
      "cache.collapse.v1", List.of(1));
  private static final List<String> CE_HEADERS = List.of(
      "ce_id", "ce_type", "ce_source", "ce_subject", "ce_time", "ce_specversion", "ce_dataschema");

  private EventReader() {}

  /** The envelope fields every topic's message has; seq only on session.events.v1. */
  private record Envelope(String eventId, String sessionId, Long seq, long occurredAtMs, int schemaVersion,
      String type, String payloadCase, Supplier<Map<String, Object>> summary) {}

  private static String caseName(Enum<?> payloadCase) {
    return payloadCase.name().equals("PAYLOAD_NOT_SET") ? null : payloadCase.name().toLowerCase(Locale.ROOT);
  }

  private static Envelope decode(String topic, byte[] value) throws InvalidProtocolBufferException {
    switch (topic) {
      case SESSION_TOPIC -> {
        SessionEvent e = SessionEvent.parseFrom(value);
        return new Envelope(e.getEventId(), e.getSessionId(), e.getSeq(), e.getOccurredAtMs(), e.getSchemaVersion(),
            e.getType(), caseName(e.getPayloadCase()), () -> summarizeSession(e));
      }
      case "prompt.prefix.v1" -> {
        PrefixEvent e = PrefixEvent.parseFrom(value);
        return new Envelope(e.getEventId(), e.getSessionId(), null, e.getOccurredAtMs(), e.getSchemaVersion(),
            e.getType(), caseName(e.getPayloadCase()), () -> summarizePrefix(e));
      }
      case "llm.usage.v1" -> {
        LlmUsageEvent e = LlmUsageEvent.parseFrom(value);
        return new Envelope(e.getEventId(), e.getSessionId(), null, e.getOccurredAtMs(), e.getSchemaVersion(),
            e.getType(), caseName(e.getPayloadCase()), () -> summarizeUsage(e.getUsage()));
      }
      default -> {
        CacheCollapseEvent e = CacheCollapseEvent.parseFrom(value);
        return new Envelope(e.getEventId(), e.getSessionId(), null, e.getOccurredAtMs(), e.getSchemaVersion(),
            e.getType(), caseName(e.getPayloadCase()), () -> summarizeCollapse(e.getCollapsed()));
      }
    }
  }

  private static Map<String, Object> skip(String where, String why) {
    System.err.println("skipping " + where + ": " + why);
    return null;
  }

  /** The line for one record of {@code topic} (without --topic-prefix), or null when it is not a usable event. */
  static Map<String, Object> describe(String topic, ConsumerRecord<String, byte[]> record) {
    String where = topic + "[" + record.partition() + "]@" + record.offset();
    Envelope event;
    try {
      event = decode(topic, record.value() == null ? new byte[0] : record.value());
    } catch (InvalidProtocolBufferException error) {
      // The TypeScript services send these to the DLQ.
      return skip(where, "undecodable: " + error.getMessage());
    }
    if (!SCHEMA_VERSIONS.get(topic).contains(event.schemaVersion())) {
      return skip(where, "unknown schema_version " + Integer.toUnsignedString(event.schemaVersion()));
    }
    if (event.eventId().isEmpty() || event.sessionId().isEmpty()) return skip(where, "no event_id or session_id");
    Map<String, String> typeNames = TYPE_NAMES.get(topic);
    // A payload this code does not know (a newer producer's event type: no payload with classes
    // generated before it, a case not in TYPE_NAMES with newer ones) is printed as an unknown type and
    // otherwise ignored, and its seq still counts.
    boolean knownCase = event.payloadCase() != null && typeNames.containsKey(event.payloadCase());
    boolean unknownType = !knownCase && !typeNames.containsValue(event.type());
    if (!unknownType && !(knownCase && event.type().equals(typeNames.get(event.payloadCase())))) {
      return skip(where, "type \"" + event.type() + "\" does not match payload " + event.payloadCase());
    }
    Map<String, String> ce = new LinkedHashMap<>();
    for (String name : CE_HEADERS) {
      Header header = record.headers().lastHeader(name);
      if (header != null) ce.put(name, new String(header.value(), StandardCharsets.UTF_8));
    }
    // Records written before the CloudEvents headers carry none; when present they must agree with the envelope.
    if (ce.containsKey("ce_id") && !ce.get("ce_id").equals(event.eventId())) {
      return skip(where, "ce_id " + ce.get("ce_id") + " is not the event_id " + event.eventId());
    }
    if (ce.containsKey("ce_type") && !ce.get("ce_type").equals("prefixguard." + topic + "." + event.type())) {
      return skip(where, "ce_type " + ce.get("ce_type") + " does not name " + topic + " " + event.type());
    }
    Map<String, Object> line = new LinkedHashMap<>();
    line.put("kind", "event");
    line.put("topic", topic);
    line.put("session_id", event.sessionId());
    if (event.seq() != null) line.put("seq", event.seq());
    line.put("type", event.type());
    line.put("event_id", event.eventId());
    line.put("occurred_at_ms", event.occurredAtMs());
    line.put("schema_version", Integer.toUnsignedLong(event.schemaVersion()));
    line.put("partition", record.partition());
    line.put("offset", record.offset());
    line.putAll(ce);
    if (unknownType) line.put("unknown_type", true);
    line.put("payload", unknownType ? Map.of() : event.summary().get());
    return line;
  }

  private static long uint32(int value) {
    return Integer.toUnsignedLong(value);
  }

  /** Characters as code points, as Python counts them (not UTF-16 units). */
  private static int chars(String text) {
    return text.codePointCount(0, text.length());
  }

  private static Map<String, Object> summarizeSession(SessionEvent event) {
    Map<String, Object> out = new LinkedHashMap<>();
    switch (event.getPayloadCase()) {
      case SESSION_CREATED -> {
        SessionCreated p = event.getSessionCreated();
        out.put("owner", p.getOwner());
        out.put("workspace", p.getWorkspace());
        out.put("timezone", p.getTimezone());
        out.put("kind", p.getKind().name());
        out.put("parent_session_id", p.getParentSessionId());
        out.put("inherited_summary_from", p.getInheritedSummaryFrom());
        if (p.hasSealed()) out.put("sealed", true);
      }
      case MESSAGE_SAVED -> {
        MessageSaved p = event.getMessageSaved();
        // Sealed content (schema 2) is not read here: GetDataKeys and AES-256-GCM would open it.
        if (p.hasSealed()) {
          out.put("sealed", true);
          out.put("message_id", p.getMessageId());
          out.put("role", p.getRole().name());
          out.put("thinking_chars", uint32(p.getThinkingChars()));
          out.put("local_date", p.getLocalDate());
          return out;
        }
        List<String> parts = new ArrayList<>();
        List<String> toolsCalled = new ArrayList<>();
        int textChars = 0;
        for (ContentPart part : p.getContentList()) {
          if (part.getPartCase() == ContentPart.PartCase.PART_NOT_SET) continue;
          parts.add(part.getPartCase().name().toLowerCase(Locale.ROOT));
          if (part.hasText()) textChars += chars(part.getText().getText());
          if (part.hasToolCall()) toolsCalled.add(part.getToolCall().getName());
        }
        out.put("message_id", p.getMessageId());
        out.put("role", p.getRole().name());
        out.put("parts", parts);
        out.put("text_chars", textChars);
        out.put("tools_called", toolsCalled);
        out.put("thinking_chars", uint32(p.getThinkingChars()));
        out.put("local_date", p.getLocalDate());
      }
      case MESSAGE_DELETED -> out.put("message_id", event.getMessageDeleted().getMessageId());
      case COMPACTION_COMMITTED -> {
        CompactionCommitted p = event.getCompactionCommitted();
        if (p.hasSealed()) out.put("sealed", true);
        out.put("generation", uint32(p.getGeneration()));
        out.put("boundary_message_id", p.getBoundaryMessageId());
        if (!p.hasSealed()) out.put("summary_chars", chars(p.getSummary()));
      }
      case SIDE_TASK_PROMOTED -> out.put("parent_session_id", event.getSideTaskPromoted().getParentSessionId());
      default -> {
        // SessionDeleted has no fields.
      }
    }
    return out;
  }

  private static Map<String, Object> summarizePrefix(PrefixEvent event) {
    Map<String, Object> out = new LinkedHashMap<>();
    out.put("request_id", event.getRequestId());
    if (event.hasObserved()) {
      FingerprintObserved p = event.getObserved();
      out.put("model", p.getModel());
      out.put("messages", uint32(p.getMessages()));
      out.put("first_build", p.getFirstBuild());
      out.put("rules_decision", p.getRulesDecision());
      out.put("estimated_tokens", p.getEstimatedTokens());
    } else {
      PrefixChanged p = event.getChanged();
      out.put("cause", p.getCause());
      out.put("changed_sections", List.copyOf(p.getChangedSectionsList()));
      out.put("tools_changed", p.getToolsChanged());
      out.put("history_rewritten", p.getHistoryRewritten());
      out.put("messages", uint32(p.getMessages()));
    }
    return out;
  }

  private static Map<String, Object> summarizeUsage(UsageRecorded p) {
    Map<String, Object> out = new LinkedHashMap<>();
    out.put("request_id", p.getRequestId());
    out.put("model", p.getModel());
    out.put("provider", p.getProvider());
    out.put("prompt_tokens", p.getPromptTokens());
    out.put("cached_tokens", p.getCachedTokens());
    out.put("completion_tokens", p.getCompletionTokens());
    out.put("cache_creation_tokens", p.getCacheCreationTokens());
    return out;
  }

  private static Map<String, Object> summarizeCollapse(CacheCollapsed p) {
    Map<String, Object> out = new LinkedHashMap<>();
    out.put("request_id", p.getRequestId());
    out.put("model", p.getModel());
    out.put("cached_ratio", p.getCachedRatio());
    out.put("baseline_ratio", p.getBaselineRatio());
    out.put("cause_code", p.getCauseCode());
    out.put("changed_sections", List.copyOf(p.getChangedSectionsList()));
    out.put("extra_cost", p.getExtraCost());
    return out;
  }
}
