#!/usr/bin/env python3
# bench-hooks-hosts.py [FSBROKER] — what a shell hook of `fsbroker hooks run
# gemini-cli` and `... codex` adds to a shell call (docs/agent-hosts.md,
# "Cost"): the hook, a process as the host starts it, against the bare
# `fsbroker run --core` of the same command; medians of 50 hooks and 20 runs.
# Codex's Bash hook is counted twice: the refusal that hands the model the
# line, and the allow of that line (the model's own round trip is not).
import os, subprocess, time, json, statistics, sys, tempfile, shutil
F = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build/fsbroker")
tmp = tempfile.mkdtemp(); os.makedirs(tmp + "/ws"); os.makedirs(tmp + "/run", mode=0o700)
env = dict(os.environ, HOME=tmp + "/home", XDG_STATE_HOME=tmp + "/state", XDG_RUNTIME_DIR=tmp + "/run")
for v in ("CLAUDE_PROJECT_DIR", "GEMINI_PROJECT_DIR"):
    env.pop(v, None)
ws = tmp + "/ws"
med = lambda xs: statistics.median(xs) * 1e3

def hook(host, ev):
    t = time.perf_counter()
    p = subprocess.run([F, "hooks", "run", host], input=json.dumps(ev).encode(), env=env, capture_output=True)
    return time.perf_counter() - t, p

def bare(state):
    rb = []
    for i in range(20):
        t = time.perf_counter()
        subprocess.run([F, "run", "--core", state, "--tool-call", "tc-r%d" % i, "--", "/bin/bash", "-c", "true"],
                       env=env, capture_output=True, cwd=ws)
        rb.append(time.perf_counter() - t)
    return med(rb)

# Gemini CLI
sid = "gb1"; state = tmp + "/state/fsbroker/hosts/gemini-cli-" + sid
base = dict(session_id=sid, transcript_path="/x", cwd=ws, timestamp="2026-12-02T00:00:00Z")
ev = dict(base, hook_event_name="BeforeTool", tool_name="run_shell_command", tool_input=dict(command="true"))
t, p = hook("gemini-cli", ev)
print("gemini-cli: first BeforeTool hook (starts the core): %.1f ms" % (t * 1e3))
hs = [hook("gemini-cli", ev)[0] for _ in range(50)]
r = bare(state)
print("gemini-cli: BeforeTool run_shell_command hook %.2f ms, bare run --core %.2f ms, (hook+run)/run = %.3f"
      % (med(hs), r, (med(hs) + r) / r))
hook("gemini-cli", dict(base, hook_event_name="SessionEnd", reason="exit"))

# Codex CLI
sid = "cb1"; state = tmp + "/state/fsbroker/hosts/codex-" + sid
base = dict(session_id=sid, transcript_path="/x", cwd=ws, model="gpt-5")
ev = dict(base, hook_event_name="PreToolUse", tool_name="Bash", tool_input=dict(command="true"), tool_use_id="call_0")
t, p = hook("codex", ev)
print("codex: first PreToolUse Bash hook (starts the core): %.1f ms" % (t * 1e3))
line = json.loads(p.stdout)["hookSpecificOutput"]["permissionDecisionReason"].split("\n")[-1]
ev2 = dict(ev, tool_input=dict(command=line), tool_use_id="call_1")
assert json.loads(hook("codex", ev2)[1].stdout)["hookSpecificOutput"]["permissionDecision"] == "allow"
hd = [hook("codex", ev)[0] for _ in range(50)]
ha = [hook("codex", ev2)[0] for _ in range(50)]
r = bare(state)
print("codex: PreToolUse Bash refusal %.2f ms + allow of the line %.2f ms, bare run --core %.2f ms, (hooks+run)/run = %.3f"
      % (med(hd), med(ha), r, (med(hd) + med(ha) + r) / r))
subprocess.run("true", shell=True)
import socket
s = socket.socket(socket.AF_UNIX); s.connect(state + "/admin.sock"); s.sendall(b'{"id":1,"command":"Shutdown"}\n'); s.recv(4096); s.close()
shutil.rmtree(tmp, ignore_errors=True)
