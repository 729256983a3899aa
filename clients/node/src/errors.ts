/*
 * errors.ts — the errors the package throws. Each names what failed in a
 * sentence a person can act on; `code` is for programs.
 */

export type FsbrokerErrorCode =
  | "ENOFSBROKER" // the native fsbroker binary is not installed where the package looks
  | "ECORESTART" // the core did not start (bad flag, pack error, a binary that fails)
  | "ECOREEXIT" // the core exited while a request was waiting, or before it
  | "ETIMEDOUT" // the core did not answer a request in time
  | "EREFUSED" // the core answered ok:false (see .reply)
  | "ETURN" // a turn was begun while another is open, or committed when none is
  | "ERUNSTART" // `fsbroker run` or the command could not start
  | "ECLI" // an `fsbroker backup` command failed
  | "EPATH" // a path the MCP tools refuse (relative, .., NUL, outside the workspace)
  | "EDENIED" // the pack refused the access
  | "ERACE" // the file changed between the core's check and the tool's own open: nothing done
  | "ETOOLARGE" // a write or read over the configured size limit
  | "EBINARY" // edit_file on a file that is not UTF-8 text
  | "ECWD"; // run_command's cwd is not a directory inside the workspace

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
