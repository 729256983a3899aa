/*
 * protocol.ts — the types of the control protocol (docs/protocol.md,
 * "Control protocol"), of `fsbroker run --summary-fd` (docs/runtime.md) and
 * of `fsbroker backup … --json` (docs/restore.md).
 */

export type Decision = "allow" | "deny" | "ask";
export type Op =
  | "read" | "write" | "create" | "delete" | "rename-from" | "rename-to" | "mkdir"
  | "link" | "symlink" | "chmod" | "chown" | "utimes" | "xattr" | "touch";

export interface ReplyBase {
  id: number | string;
  ok: boolean;
  error?: string;
}

export interface CheckAccessReply extends ReplyBase {
  decision: Decision;
  rule: string;
  reason?: string;
  hint?: string;
  path: string;
  normalisedPath: string;
  /** Whether the object judged exists; then its device and inode (decimal strings). */
  exists: boolean;
  dev?: string;
  ino?: string;
  errno?: string;
  blockId?: string;
}

export interface ModifyBackupReply extends ReplyBase {
  decision: Decision;
  rule: string;
  /** The real path judged and backed up, and the object's identity as in CheckAccessReply. */
  normalisedPath?: string;
  exists?: boolean;
  dev?: string;
  ino?: string;
  backedUp?: boolean;
  note?: string;
  blockId?: string;
}

export interface PromptBlock {
  blockId: string;
  op: string;
  path: string;
  requested: string;
  rule: string;
  sessionId: string;
  toolCallId: string;
  time: number;
}

export interface PromptEvent extends PromptBlock {
  event: "prompt";
  timeoutSeconds: number;
}

export interface ReadyEvent {
  event: "ready";
  socket: string;
  adminSocket?: string;
  sessionId: string;
  pack: string;
  pid: number;
  approvals?: "inline" | "deferred";
}

export interface StatsReply extends ReplyBase {
  pack: string;
  requests: number;
  allowed: number;
  denied: number;
  asked: number;
  errors: number;
  promptBlocks: number;
  uptimeMs: number;
  [k: string]: unknown;
}

/** Requests by command: their fields (id and command added by the client). */
export interface Requests {
  CheckAccess: { path: string; op: Op; toolCallId?: string; sessionId?: string };
  ModifyBackup: { path: string; toolCallId?: string; sessionId?: string };
  EnableModifyBackup: { enabled: boolean; fileBackupMaxSizeMB?: number; sessionId?: string };
  CommitModifyBackup: { commitMsg: string; sessionId?: string };
  PromptBlocks: { toolCallId?: string; sessionId?: string };
  Approve: { blockId: string; scope?: "once" | "session"; sessionId?: string };
  Deny: { blockId: string; sessionId?: string };
  Reload: Record<string, never>;
  Stats: Record<string, never>;
  Shutdown: Record<string, never>;
}

export interface Replies {
  CheckAccess: CheckAccessReply;
  ModifyBackup: ModifyBackupReply;
  EnableModifyBackup: ReplyBase & { enabled: boolean; fileBackupMaxSizeMB: number };
  CommitModifyBackup: ReplyBase & { cycle: number };
  PromptBlocks: ReplyBase & { blocks: PromptBlock[] };
  Approve: ReplyBase & { blockId: string; scope: "once" | "session" };
  Deny: ReplyBase & { blockId: string };
  Reload: ReplyBase & { pack: string };
  Stats: StatsReply;
  Shutdown: ReplyBase;
}

export type Command = keyof Requests;

/** The summary `fsbroker run --summary-fd` writes (docs/runtime.md). */
export interface RunSummary {
  exitStatus: number;
  signal?: number | null;
  mode?: "embedded" | "attached";
  /** The network the command had: the pack's `network`, or `--network`. */
  network?: "host" | "none";
  session?: string;
  toolCall?: string;
  stateDir?: string;
  cycle?: number;
  cycleSealed?: boolean;
  changed?: string[];
  backedUp?: number;
  /** `pathBytes` (percent-encoded) instead of `path` for a name that is not UTF-8. */
  denied?: { path?: string; pathBytes?: string; op: string; rule: string }[];
  waiting?: { blockId: string; path?: string; pathBytes?: string; op: string; rule: string; approveCommand: string }[];
  restoreCommand?: string | null;
  rerunCommand?: string;
  /** The core's log lines of the run, kept out of the command's stderr. */
  diagnostics?: string[];
  /** Only when the run failed before the command ran. */
  error?: string;
}

/** One entry of `fsbroker backup list --json`. */
export interface CycleInfo {
  cycle: number;
  state: "sealed" | "recovered" | "open" | string;
  opened: string | number | null;
  sealed: string | number | null;
  paths: number;
  objects: number;
  message: string | null;
  auditHead?: string | null;
  malformedLines?: number;
}

/** One entry of `fsbroker backup diff --json`. */
export interface DiffEntry {
  path: string;
  status: "changed" | "unchanged" | "created" | "removed" | "no-backup" | "renamed" | "error";
  /** With status "renamed": the new name (`path` is the old one). */
  movedTo?: string;
  detail?: string;
}

/** One entry of `fsbroker backup restore --json`. */
export interface RestoreEntry {
  path: string;
  result: "restored" | "removed" | "unchanged" | "skipped" | "failed" | "would" | string;
  detail?: string;
}
