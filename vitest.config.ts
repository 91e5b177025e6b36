import { defineConfig } from "vitest/config";

// Tiers by suffix, named by what a test starts: *.unit.test.ts are pure; *.int.test.ts need real
// MariaDB and Kafka, a store or fake gRPC servers; *.e2e.test.ts start whole services (startX from a
// service package, or startStack) and talk gRPC.
// "@prefix-guard/source": a workspace package that publishes built JavaScript (libs/client) is
// tested from its sources; its package.json lists that condition before dist/, and tsconfig.json
// resolves with it too.
const SOURCE_CONDITION = "@prefix-guard/source";

export default defineConfig({
  resolve: { conditions: [SOURCE_CONDITION, "module", "node", "development|production"] },
  ssr: { resolve: { conditions: [SOURCE_CONDITION, "module", "node", "development|production"] } },
  test: {
    projects: [
      {
        extends: true,
        test: { name: "unit", include: ["{libs,services,bench,deploy}/**/*.unit.test.ts"], testTimeout: 10_000 },
      },
      {
        extends: true,
        test: {
          name: "int",
          include: ["{libs,services,bench,deploy}/**/*.int.test.ts"],
          testTimeout: 60_000,
          hookTimeout: 60_000,
        },
      },
      {
        extends: true,
        test: {
          name: "e2e",
          include: ["{libs,services,bench,deploy}/**/*.e2e.test.ts"],
          testTimeout: 120_000,
          hookTimeout: 120_000,
          fileParallelism: false,
        },
      },
    ],
    exclude: ["**/node_modules/**", "proto/gen/**"],
  },
});
