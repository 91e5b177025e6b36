import { ValidationError } from "@prefix-guard/errors";
import { MAX_JSON_DEPTH } from "@prefix-guard/events/json-limits";
import {
  BuildCompactionRequestRequest,
  BuildRequestRequest,
  WireFormat,
} from "@prefix-guard/proto/assembly/v1/prompt_assembly_service";
import { describe, expect, it } from "vitest";
import { MAX_SECTIONS, MAX_TOOLS, validateBuildRequest, validateCompactionRequest } from "./validation";

const request = (fields: Partial<BuildRequestRequest> = {}) =>
  BuildRequestRequest.fromPartial({
    sessionId: "s1",
    wireFormat: WireFormat.WIRE_FORMAT_ANTHROPIC_MESSAGES,
    model: "claude-test",
    ...fields,
  });
const sections = (count: number) => Array.from({ length: count }, (_, i) => ({ key: `s${i}`, text: "x" }));
const tools = (count: number, inputSchemaJson = '{"type":"object"}') =>
  Array.from({ length: count }, (_, i) => ({ name: `t${i}`, description: "", inputSchemaJson }));
/** A JSON schema whose properties nest `depth` objects in all. */
const nestedSchema = (depth: number) => `${'{"a":'.repeat(depth - 1)}{}${"}".repeat(depth - 1)}`;

function rejection(run: () => unknown): ValidationError {
  try {
    run();
  } catch (error) {
    if (error instanceof ValidationError) return error;
    throw error;
  }
  throw new Error("expected a ValidationError");
}

describe("validateBuildRequest: hostile sizes", () => {
  it("takes MAX_SECTIONS sections and refuses one more, naming `sections`", () => {
    expect(MAX_SECTIONS).toBe(64);
    expect(validateBuildRequest(request({ sections: sections(MAX_SECTIONS) })).sections).toHaveLength(MAX_SECTIONS);
    const error = rejection(() => validateBuildRequest(request({ sections: sections(MAX_SECTIONS + 1) })));
    expect(error.field).toBe("sections");
  });

  it("takes MAX_TOOLS tools and refuses one more, naming `tools`", () => {
    expect(MAX_TOOLS).toBe(256);
    expect(validateBuildRequest(request({ tools: tools(MAX_TOOLS) })).tools).toHaveLength(MAX_TOOLS);
    const error = rejection(() => validateBuildRequest(request({ tools: tools(MAX_TOOLS + 1) })));
    expect(error.field).toBe("tools");
  });

  it("refuses a count over the cap before looking at any element", () => {
    // The 65th section is also malformed: the count is what is reported, without reading them all.
    const error = rejection(() =>
      validateBuildRequest(request({ sections: [...sections(MAX_SECTIONS), { key: "", text: "" }] })),
    );
    expect(error.field).toBe("sections");
  });

  it("takes an input schema nested MAX_JSON_DEPTH deep and refuses one level more, as json_too_deep", () => {
    const ok = validateBuildRequest(request({ tools: tools(1, nestedSchema(MAX_JSON_DEPTH)) }));
    expect(ok.tools[0]?.inputSchema).toHaveProperty("a");
    const error = rejection(() =>
      validateBuildRequest(
        request({
          tools: [...tools(2), { name: "deep", description: "", inputSchemaJson: nestedSchema(MAX_JSON_DEPTH + 1) }],
        }),
      ),
    );
    expect(error.field).toBe("tools[2].input_schema_json");
    expect(error.reason).toBe("json_too_deep");
  });

  it("refuses a megabyte-deep schema without parsing it", () => {
    // Under the 64 KB schema cap, but 60,000 levels: JSON.parse would take it, the writers would not.
    const error = rejection(() => validateBuildRequest(request({ tools: tools(1, `{"a":${"[".repeat(60_000)}`) })));
    expect(error.reason).toBe("json_too_deep");
  });

  it("names the fields under `request.` in BuildCompactionRequest", () => {
    const compaction = (inner: BuildRequestRequest) =>
      validateCompactionRequest(BuildCompactionRequestRequest.fromPartial({ request: inner }));
    expect(rejection(() => compaction(request({ sections: sections(MAX_SECTIONS + 1) }))).field).toBe(
      "request.sections",
    );
    expect(rejection(() => compaction(request({ tools: tools(MAX_TOOLS + 1) }))).field).toBe("request.tools");
    const deep = rejection(() => compaction(request({ tools: tools(1, nestedSchema(MAX_JSON_DEPTH + 1)) })));
    expect(deep.field).toBe("request.tools[0].input_schema_json");
    expect(deep.reason).toBe("json_too_deep");
  });
});
