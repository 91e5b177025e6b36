import { silentLogger } from "@prefix-guard/logging";
import { loadRulesSnapshotConfig, startRulesSnapshot } from "@prefix-guard/rules-snapshot";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openMemoryBus, runPrefixctl } from "./support";
import { makeTlsFixture, serverTlsEnv, type TlsFixture } from "./tls-fixtures";

const SRE_TOKEN = "sre-token-abcdefghijklmn";

const prefixctl = (argv: string[]) => runPrefixctl(argv);

describe("prefixctl with --ca, --cert/--key and --token", () => {
  let tls: TlsFixture;
  let address: string;
  let stop: () => Promise<void>;

  beforeAll(async () => {
    tls = makeTlsFixture();
    const memory = await openMemoryBus();
    const bus = memory.bus;
    const service = await startRulesSnapshot(
      loadRulesSnapshotConfig({
        GRPC_PORT: "0",
        DATABASE_URL: "sqlite::memory:",
        ...serverTlsEnv(tls),
        GRPC_AUTH_TOKENS: `sre:${SRE_TOKEN}`,
      }),
      { bus, logger: silentLogger() },
    );
    // A pinned snapshot to read back.
    await service.service.resolveWorkspaceRules({
      sessionId: "811",
      workspace: "/srv/ws/oc_4fc3",
      source: { $case: "content", value: { text: "# Rules\n- use pnpm\n" } },
      compactionGeneration: 0,
      embed: false,
      locale: "",
    });
    address = service.address;
    stop = async () => {
      await service.stop();
      await memory.close();
    };
  });
  afterAll(async () => stop?.());

  const target = () => ["--rules-snapshot", address];
  const mtls = () => ["--ca", tls.caCert, "--cert", tls.clientCert, "--key", tls.clientKey];

  it("reads the snapshot over mTLS with the token", async () => {
    const result = await prefixctl(["snapshot", "get", "811", "--json", ...target(), ...mtls(), "--token", SRE_TOKEN]);
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout)).toMatchObject({ session_id: "811", found: true });
    expect(result.stdout).toContain("/srv/ws/oc_4fc3");
  });

  it("takes the token and the files from the environment too", async () => {
    const { code, stdout, stderr } = await runPrefixctl(["snapshot", "get", "811", ...target()], {
      PREFIXCTL_CA: tls.caCert,
      PREFIXCTL_CERT: tls.clientCert,
      PREFIXCTL_KEY: tls.clientKey,
      PREFIXCTL_TOKEN: SRE_TOKEN,
    });
    expect(stderr).toBe("");
    expect(code).toBe(0);
    expect(stdout).toContain("/srv/ws/oc_4fc3");
  });

  it("is refused without the token, cannot connect without TLS, and names an unreadable key file", async () => {
    const noToken = await prefixctl(["snapshot", "get", "811", ...target(), ...mtls()]);
    expect(noToken.code).toBe(1);
    expect(noToken.stderr).toMatch(/UNAUTHENTICATED/);

    const plaintext = await prefixctl(["snapshot", "get", "811", ...target(), "--token", SRE_TOKEN, "--timeout", "2s"]);
    expect(plaintext.code).toBe(1);
    expect(plaintext.stderr).toMatch(/rules-snapshot/);

    const missingKey = await prefixctl([
      "snapshot",
      "get",
      "811",
      ...target(),
      "--ca",
      tls.caCert,
      "--cert",
      tls.clientCert,
      "--key",
      "/nonexistent/client.key",
    ]);
    expect(missingKey.code).toBe(2);
    expect(missingKey.stderr).toMatch(/--key \/nonexistent\/client\.key: .*ENOENT/);
  });
});
