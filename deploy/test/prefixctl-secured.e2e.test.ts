import { silentLogger } from "@prefix-guard/logging";
import { loadRulesSnapshotConfig, startRulesSnapshot } from "@prefix-guard/rules-snapshot";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type PrincipalsFixture, testToken, writePrincipalsFile } from "./principals-fixture";
import { openMemoryBus, runPrefixctl } from "./support";
import { makeTlsFixture, serverTlsEnv, type TlsFixture } from "./tls-fixtures";

// Reading a pinned snapshot (rules text, which is content) is an operator's, not an SRE's.
const OPERATOR_TOKEN = testToken("operator");
const SRE_TOKEN = testToken("sre");

const prefixctl = (argv: string[]) => runPrefixctl(argv);

describe("prefixctl with --ca, --cert/--key and --token", () => {
  let tls: TlsFixture;
  let principals: PrincipalsFixture;
  let address: string;
  let stop: () => Promise<void>;

  beforeAll(async () => {
    tls = makeTlsFixture();
    principals = writePrincipalsFile([
      { name: "operator", roles: ["operator"], tokens: [OPERATOR_TOKEN] },
      { name: "sre", roles: ["sre"], tokens: [SRE_TOKEN] },
    ]);
    const memory = await openMemoryBus();
    const bus = memory.bus;
    const service = await startRulesSnapshot(
      loadRulesSnapshotConfig({
        GRPC_PORT: "0",
        DATABASE_URL: "sqlite::memory:",
        ...serverTlsEnv(tls),
        ...principals.env(),
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
      principals.remove();
    };
  });
  afterAll(async () => stop?.());

  const target = () => ["--rules-snapshot", address];
  const mtls = () => ["--ca", tls.caCert, "--cert", tls.clientCert, "--key", tls.clientKey];

  it("reads the snapshot over mTLS with the token", async () => {
    const result = await prefixctl([
      "snapshot",
      "get",
      "811",
      "--json",
      ...target(),
      ...mtls(),
      "--token",
      OPERATOR_TOKEN,
    ]);
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
      PREFIXCTL_TOKEN: OPERATOR_TOKEN,
    });
    expect(stderr).toBe("");
    expect(code).toBe(0);
    expect(stdout).toContain("/srv/ws/oc_4fc3");
  });

  it("is refused without the token, cannot connect without TLS, and names an unreadable key file", async () => {
    const noToken = await prefixctl(["snapshot", "get", "811", ...target(), ...mtls()]);
    expect(noToken.code).toBe(1);
    expect(noToken.stderr).toMatch(/UNAUTHENTICATED/);

    const plaintext = await prefixctl([
      "snapshot",
      "get",
      "811",
      ...target(),
      "--token",
      OPERATOR_TOKEN,
      "--timeout",
      "2s",
    ]);
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

  it("is refused with a valid token of a principal whose role may not read snapshots", async () => {
    const sre = await prefixctl(["snapshot", "get", "811", "--json", ...target(), ...mtls(), "--token", SRE_TOKEN]);
    expect(sre.code).toBe(1);
    expect(sre.stderr).toMatch(/PERMISSION_DENIED/);
    expect(sre.stdout).not.toContain("/srv/ws/oc_4fc3");
  });
});
