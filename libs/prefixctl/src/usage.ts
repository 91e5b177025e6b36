import {
  defaultAdviseLimit,
  defaultCollapseLimit,
  defaultTargets,
  defaultTraceLimit,
  securityEnvVars,
  targetEnvVars,
} from "./args";
import { defaultKafkaBrokers, eventsEnvVars } from "./events/args";

export const usageText = `prefixctl: why did the prompt cache miss, and what to do about it.

Usage:
  prefixctl collapses [--since 24h] [--session ID] [--limit ${defaultCollapseLimit}] [--json]
      Cache collapses in the window (newest first), their extra cost and the prefix sections that
      changed, then totals per section. --since takes 30m, 24h, 7d ... or 'all'.
  prefixctl trace SESSION [--limit ${defaultTraceLimit}] [--json]
      Every build of one session: what changed, why, the provider's usage and whether the provider
      and our fingerprints agree (FLAG lines explain disagreements).
  prefixctl advise SESSION | --workspace W [--limit ${defaultAdviseLimit}] [--json]
      The recorded calls of a session, or of every session built in workspace W (each on its own
      calls), priced again under each cache retention its provider sells (5m, 30m, 1h, 12h, 24h) (the gaps between calls decide which
      would have hit, write prices come from the price book): which would have cost least, and by how much.
  prefixctl snapshot get SESSION [--json]
      The session's frozen workspace-rules snapshot (workspace, hash, generation, source, pinned time).
  prefixctl snapshot refresh SESSION [--reason R] [--json]
      Drop the snapshot; the next build re-pins it from the current AGENTS.md.
  prefixctl replay SESSION [--json]
      Rebuild the session's prompt-assembly projection from session-events.
  prefixctl providers [--json] [--wide]
      The provider catalogue as the services read it (built-in, with PROVIDER_CATALOGUE_FILE merged
      over it): per model family its cache API, retentions, minimum, prices and where they were checked.
  prefixctl events tail [--topic T]... [--session ID] [--from-beginning] [--json] [--brokers H:P | --embedded FILE]
      Follow the topics live, each record decoded with its CloudEvents attributes and, on a DLQ, the
      reason; Ctrl-C stops. Kafka (default ${defaultKafkaBrokers.join(",")}, env ${eventsEnvVars.brokers}) or make run's
      embedded log (--embedded .data/bus.sqlite). \`prefixctl events tail --help\` for every option.
  prefixctl token new [--json]
      A new random bearer token and its SHA-256 for the principals file (PRINCIPALS_FILE).
  echo -n TOKEN | prefixctl token hash [--json]
      The SHA-256 of a token read from standard input (never from an argument: shell history).
  prefixctl help

Options for every command:
  --json                  machine-readable JSON on stdout
  --wide                  every column and field in full (default: text fits 120 columns, … marks a cut)
  --timeout 5s            deadline of each call (500ms, 5s, 1m)
  --cache-monitor H:P     default ${defaultTargets["cache-monitor"]}, env ${targetEnvVars["cache-monitor"]}
  --rules-snapshot H:P    default ${defaultTargets["rules-snapshot"]}, env ${targetEnvVars["rules-snapshot"]}
  --prompt-assembly H:P   default ${defaultTargets["prompt-assembly"]}, env ${targetEnvVars["prompt-assembly"]}
  --tls                   connect with TLS (system roots unless --ca), env ${securityEnvVars.tls}=1
  --ca FILE               PEM of the CA to trust (implies --tls), env ${securityEnvVars.ca}
  --cert FILE --key FILE  client certificate for mTLS (implies --tls), env ${securityEnvVars.cert} / ${securityEnvVars.key}
  --token TOKEN           bearer token sent on every call, env ${securityEnvVars.token}

Exit codes: 0 ok, 1 the call failed (service down, not found, rejected), 2 usage error.
`;
