/*
 * index.ts — the fsbroker package: start a core, run tool calls through it,
 * answer its approval prompts, end turns, look at and restore backups.
 * docs/agent-hosts.md shows it in use.
 */
export { Core, startCore, defaultBinary, resolveBinary } from "./core.js";
export type { CoreOptions, TurnOptions, ApprovalAnswer } from "./core.js";
export { endAllRuns } from "./run.js";
export type { RunOptions, RunResult, ToolCall, OutputChunk } from "./run.js";
export type { DiffResult, RestoreOptions } from "./backup.js";
export { FsbrokerError } from "./errors.js";
export type { FsbrokerErrorCode } from "./errors.js";
export type * from "./protocol.js";
