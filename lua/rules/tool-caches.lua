-- tool-caches.lua — the download and build caches that package managers and
-- compilers write on every run (npm, pnpm, yarn, pip, uv, Go, Cargo, Maven,
-- Gradle, ccache). Writable without an ask and without backups: asking
-- about each of them makes `npm install` or `go build` fail, and backing
-- them up copies what the tool can download again. Included by default.lua.
--
-- What is left out on purpose: caches whose content some tool later runs
-- outside any sandbox without checking it (pre-commit's environments in
-- ~/.cache/pre-commit, pnpm's and npm's global bin dirs, pipx's venvs,
-- Playwright's browsers): a command could plant a program there. The
-- caches below are content-addressed or checked against a lockfile by the
-- tool that reads them (npm's cacache and pnpm's store verify integrity
-- hashes, Go checks go.sum, Cargo the registry checksums), except npx's
-- ~/.npm/_npx: docs/rule-packs.md says what that leaves open.

-- The caches, each with why it is safe to let a tool write it.
local caches = {
	-- npm: the content cache, logs and the update check.
	"~/.npm/**",
	-- pnpm: the content-addressed store, metadata cache and state,
	-- and the _tmp_* directory it makes to learn whether the store
	-- can hard-link into the project.
	"~/.local/share/pnpm/store/**",
	"~/.local/share/pnpm/_tmp_*/**",
	"~/.cache/pnpm/**",
	"~/.local/state/pnpm/**",
	-- yarn 1 and yarn berry's global cache.
	"~/.cache/yarn/**",
	"~/.yarn/berry/cache/**",
	-- node-gyp's headers for native addons, TypeScript's type cache.
	"~/.cache/node-gyp/**",
	"~/.cache/typescript/**",
	-- pip's and uv's wheel and HTTP caches (not their installs).
	"~/.cache/pip/**",
	"~/.cache/uv/**",
	-- Go: the build cache and the module cache (checked against go.sum).
	"~/.cache/go-build/**",
	"~/go/pkg/mod/**",
	-- Cargo: registry index and crates (checksummed), git checkouts,
	-- and the lock files and cache tracker every build takes.
	"~/.cargo/registry/**",
	"~/.cargo/git/**",
	"~/.cargo/.package-cache",
	"~/.cargo/.package-cache-mutate",
	"~/.cargo/.global-cache",
	-- Maven's and Gradle's artifact caches.
	"~/.m2/repository/**",
	"~/.gradle/caches/**",
	-- ccache, in its XDG and its old place.
	"~/.cache/ccache/**",
	"~/.ccache/**",
}

-- The directories above them, so that a fresh home can hold the first
-- cache: each names only the directory itself (making it; never what else
-- lies in it, which stays asked about).
local parents = {
	"~/.cache", "~/.local", "~/.local/share", "~/.local/share/pnpm",
	"~/.local/state", "~/.yarn", "~/.yarn/berry", "~/go", "~/go/pkg",
	"~/.cargo", "~/.m2", "~/.gradle",
}

local modify = {}
for _, list in ipairs({ caches, parents }) do
	for _, glob in ipairs(list) do
		modify[#modify + 1] = glob
	end
end

return {
	name = "tool-caches",

	fsProfile = { modify = modify },

	-- pnpm's store is made of hard links into every project's
	-- node_modules/.pnpm (or a .pnpm-store at the file system's top when
	-- home is elsewhere): changing one of those files, or linking it again,
	-- is what pnpm does. Another name of a protected file is refused by the
	-- core even here.
	hardlinkTrees = {
		"~/.local/share/pnpm/store/**",
		"**/.pnpm-store/**",
		"**/node_modules/.pnpm/**",
	},

	-- What a tool can fetch again is not worth a copy.
	backup = { skip = caches },

	tests = {
		{ op = "mkdir", path = "~/.npm/_cacache/tmp", expect = "allow", rule = "fsProfile.modify ~/.npm/**" },
		{ op = "create", path = "~/.npm/_logs/debug-0.log", expect = "allow" },
		{ op = "write", path = "~/.cache/pip/http/a/b", expect = "allow", rule = "fsProfile.modify ~/.cache/pip/**" },
		{ op = "create", path = "~/go/pkg/mod/cache/download/x.zip", expect = "allow" },
		{ op = "mkdir", path = "~/.cache", expect = "allow", rule = "fsProfile.modify ~/.cache" },
		-- The parents name themselves only: alone, the rest is default deny.
		{ op = "create", path = "~/.cache/pre-commit/repo/hook.py", expect = "deny", rule = "default deny" },
		{ op = "create", path = "~/.local/share/pnpm/pnpm", expect = "deny", rule = "default deny" },
		{ op = "mkdir", path = "~/.local/share/pnpm/_tmp_2_92b6f2a3", expect = "allow" },
		{ op = "link", path = "~/.local/share/pnpm/store/v3/files/ab/cdef", exists = true, nlink = 4, expect = "allow" },
		{ op = "write", path = "~/.cargo/bin/cargo", expect = "deny", rule = "default deny" },
	},
}
