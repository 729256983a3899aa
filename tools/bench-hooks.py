#!/usr/bin/env python3
# bench-hooks.py [FSBROKER] — what `fsbroker hooks run claude-code` adds
# (docs/agent-hosts.md, "Cost"): a PreToolUse hook on Bash against the bare
# `fsbroker run --core` of the same command, and a PreToolUse hook on Write
# (CheckAccess + ModifyBackup) against the write itself, 4 KiB and 1 MiB;
# medians of 50 (20 runs), each hook a process as Claude Code starts it.
import os, subprocess, time, json, statistics, socket, sys
import tempfile, shutil
F = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build/fsbroker")
tmp = tempfile.mkdtemp(); os.makedirs(tmp+"/ws"); os.makedirs(tmp+"/run", mode=0o700)
env = dict(os.environ, HOME=tmp+"/home", XDG_STATE_HOME=tmp+"/state", XDG_RUNTIME_DIR=tmp+"/run")
env.pop("CLAUDE_PROJECT_DIR", None)
ws = tmp+"/ws"; sid="m1"; D=tmp+"/state/fsbroker/hosts/claude-code-"+sid
def ev(name, extra): return json.dumps(dict(session_id=sid, transcript_path="/x", cwd=ws, hook_event_name=name, **extra)).encode()
def hook(data):
    t=time.perf_counter(); p=subprocess.run([F,"hooks","run","claude-code"], input=data, env=env, capture_output=True); return time.perf_counter()-t, p
med=lambda xs: statistics.median(xs)*1e3
# first use: starts the core
t,p = hook(ev("PreToolUse", dict(tool_name="Bash", tool_input=dict(command="true"), tool_use_id="toolu_0")))
print("first Bash hook (starts the core): %.1f ms" % (t*1e3))
N=50
hb=[]; 
for i in range(N):
    t,p = hook(ev("PreToolUse", dict(tool_name="Bash", tool_input=dict(command="true"), tool_use_id="toolu_b%d"%i))); hb.append(t)
cmd = json.loads(p.stdout)["hookSpecificOutput"]["updatedInput"]["command"]
rb=[]
for i in range(20):
    t=time.perf_counter(); subprocess.run([F,"run","--core",D,"--tool-call","tc-r%d"%i,"--","/bin/bash","-c","true"], env=env, capture_output=True, cwd=ws); rb.append(time.perf_counter()-t)
print("Bash: hook %.2f ms, bare run --core %.2f ms, (hook+run)/run = %.3f" % (med(hb), med(rb), (med(hb)+med(rb))/med(rb)))
for size in (4096, 1<<20):
    data = os.urandom(size); hw=[]; ww=[]
    for i in range(N):
        path = ws+"/f%d-%d.bin"%(size,i)
        with open(path,"wb") as f: f.write(data)
        t,p = hook(ev("PreToolUse", dict(tool_name="Write", tool_input=dict(file_path=path, content="x"), tool_use_id="toolu_w%d"%i))); hw.append(t)
        assert p.returncode==0 and b"deny" not in p.stdout, p
        t=time.perf_counter()
        with open(path,"wb") as f: f.write(data)
        ww.append(time.perf_counter()-t)
    # the core's part: CheckAccess + ModifyBackup over the admin socket, in process
    cw=[]
    for i in range(N):
        path = ws+"/f%d-%d.bin"%(size,i)
        with open(path,"wb") as f: f.write(data)
        s=socket.socket(socket.AF_UNIX); s.connect(D+"/admin.sock"); fl=s.makefile("rw")
        t=time.perf_counter()
        fl.write(json.dumps(dict(id=1,command="CheckAccess",path=path,op="write",toolCallId="x%d"%i))+"\n"); fl.flush(); fl.readline()
        fl.write(json.dumps(dict(id=2,command="ModifyBackup",path=path,toolCallId="x%d"%i))+"\n"); fl.flush(); r=fl.readline()
        cw.append(time.perf_counter()-t); s.close()
    print("Write %d B: hook %.2f ms (CheckAccess+ModifyBackup alone %.2f ms), the write %.3f ms, hook/write = %.0f, requests/write = %.0f" % (size, med(hw), med(cw), med(ww), med(hw)/med(ww), med(cw)/med(ww)))
    subprocess.run(F+" hooks run claude-code", shell=True, input=ev("Stop", {}), env=env)
subprocess.run([F,"hooks","run","claude-code"], input=ev("SessionEnd", {}), env=env)

shutil.rmtree(tmp, ignore_errors=True)
