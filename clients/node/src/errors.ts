/*
 * errors.ts — the errors the package throws. Each names what failed in a
 * sentence a person can act on; `code` is for programs.
 */

export type FsbrokerErrorCode =
  | "ECORESTART" // the core did not start (bad flag, pack error, binary missing)
  | "ECOREEXIT" // the core exited while a request was waiting, or before it
  | "ETIMEDOUT" // the core did not answer a request in time
  | "EREFUSED" // the core answered ok:false (see .reply)
  | "ETURN" // a turn was begun while another is open, or committed when none is
  | "ERUNSTART" // `fsbroker run` or the command could not start
  | "ECLI" // an `fsbroker backup` command failed
  | "EPATH" // a path the MCP tools refuse (relative, .., NUL, outside the workspace)
  | "EDENIED" // the pack refused the access
  | "ERACE" // the file changed between the core's check and the tool's own open: nothing done
  | "ETOOLARGE"; // a write over the configured size limit

export class FsbrokerError extends Error {
  readonly code: FsbrokerErrorCode;
  /** The core's reply, for EREFUSED and EDENIED. */
  readonly reply?: Record<string, unknown>;

  constructor(code: FsbrokerErrorCode, message: string, reply?: Record<string, unknown>) {
    super(message);
    this.name = "FsbrokerError";
    this.code = code;
    if (reply !== undefined) this.reply = reply;
  }
}
