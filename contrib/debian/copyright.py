#!/usr/bin/python3
"""Write the Debian copyright file of the blktune package (DEP-5) to stdout.

The binary links Rust crates statically; their names, versions, licences
and authors come from `cargo tree` (the crates linked into the blktune
binary on Linux: normal dependencies, no proc-macros or build scripts) and
`cargo metadata`, at package time, so the list is always the one built.

Where a crate offers a choice (`MIT OR Apache-2.0`), it is distributed here
under MIT or Apache-2.0; a crate whose licence offers neither must be one
whose text this script carries (Zlib today), or the script fails: a new
dependency under another licence is never shipped without its text.

    contrib/debian/copyright.py [--manifest-path Cargo.toml] [--years 2025-2026] > copyright
"""

import argparse
import json
import re
import subprocess
import sys

TARGET = "x86_64-unknown-linux-gnu"
CHOSEN = ("MIT", "Apache-2.0")

MIT_TEXT = """\
 Permission is hereby granted, free of charge, to any person obtaining a copy
 of this software and associated documentation files (the "Software"), to deal
 in the Software without restriction, including without limitation the rights
 to use, copy, modify, merge, publish, distribute, sublicense, and/or sell
 copies of the Software, and to permit persons to whom the Software is
 furnished to do so, subject to the following conditions:
 .
 The above copyright notice and this permission notice shall be included in
 all copies or substantial portions of the Software.
 .
 THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
 IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,
 FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE
 AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER
 LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM,
 OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE
 SOFTWARE."""

ZLIB_TEXT = """\
 This software is provided 'as-is', without any express or implied warranty.
 In no event will the authors be held liable for any damages arising from the
 use of this software.
 .
 Permission is granted to anyone to use this software for any purpose,
 including commercial applications, and to alter it and redistribute it
 freely, subject to the following restrictions:
 .
 1. The origin of this software must not be misrepresented; you must not
    claim that you wrote the original software. If you use this software in
    a product, an acknowledgment in the product documentation would be
    appreciated but is not required.
 2. Altered source versions must be plainly marked as such, and must not be
    misrepresented as being the original software.
 3. This notice may not be removed or altered from any source distribution."""

# Licences (SPDX) whose text is here, for crates that offer no MIT or Apache-2.0.
TEXTS = {"Zlib": ZLIB_TEXT}


def run(*cmd):
    return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout


def linked_crates(manifest):
    """(name, version) of every crate linked into the blktune binary."""
    out = run("cargo", "tree", "--locked", "--manifest-path", manifest, "-p", "blktune",
              "-e", "normal,no-proc-macro", "--target", TARGET, "--prefix", "none",
              "--format", "{p}")
    crates = set()
    for line in out.splitlines():
        m = re.match(r"^(\S+) v(\S+)", line.strip())
        if m:
            crates.add((m.group(1), m.group(2)))
    return crates


def options(expr):
    """The licences a crate may be taken under: `A OR B`, `A/B` (old cargo style)."""
    expr = expr.replace("/", " OR ").replace("(", "").replace(")", "")
    return [o.strip() for o in re.split(r"\s+OR\s+", expr) if o.strip()]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--manifest-path", default="Cargo.toml")
    ap.add_argument("--years", default="", help="the project's copyright years, e.g. 2025-2026")
    a = ap.parse_args()
    years = f"{a.years} " if a.years else ""
    meta = json.loads(run("cargo", "metadata", "--locked", "--format-version", "1",
                          "--manifest-path", a.manifest_path, "--filter-platform", TARGET))
    by_key = {(p["name"], p["version"]): p for p in meta["packages"]}
    ours = {"blktune", "blktune-core"}
    rows = []
    needed = set()
    problems = []
    for name, version in sorted(linked_crates(a.manifest_path)):
        if name in ours:
            continue
        p = by_key.get((name, version))
        if p is None:
            problems.append(f"{name} {version}: not in cargo metadata")
            continue
        lic = p.get("license") or ""
        opts = options(lic)
        if not any(o in CHOSEN for o in opts):
            known = [o for o in opts if o in TEXTS]
            if not known:
                problems.append(f"{name} {version}: licence '{lic}' offers neither MIT nor "
                                "Apache-2.0, and this script has no text for it")
                continue
            needed.add(known[0])
        authors = ", ".join(p.get("authors") or []) or f"the {name} authors"
        rows.append((name, version, lic, authors, p.get("repository") or ""))
    if problems:
        for pr in problems:
            print(f"copyright.py: {pr}", file=sys.stderr)
        sys.exit(1)

    w = sys.stdout.write
    w("Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/\n")
    w("Upstream-Name: blktune\n")
    w("Upstream-Contact: The blktune developers <blktune@users.noreply.github.com>\n")
    w("Comment: /usr/bin/blktune links the Rust crates below statically (from cargo\n")
    w(" metadata when the package was built). Where a crate offers a choice of\n")
    w(" licences, it is distributed here under MIT or Apache-2.0; the texts of\n")
    w(" the other licences named (" + (", ".join(sorted(needed)) or "none") + ") are below.\n")
    w(" .\n")
    w(f" {len(rows)} crates (name version: licence; copyright holders):\n")
    for name, version, lic, authors, _repo in rows:
        w(f"  {name} {version}: {lic}; Copyright: {authors}\n")
    w("\n")
    w("Files: *\n")
    w(f"Copyright: {years}The blktune developers\n")
    w("License: MIT or Apache-2.0\n")
    w("\n")
    w("Files: crates/blktune-core/bpf/*\n")
    w(f"Copyright: {years}The blktune developers\n")
    w("License: GPL-2\n")
    w("Comment: The BPF program embedded in the binary (the kernel's tracing helpers\n")
    w(" need a GPL-compatible program).\n")
    w("\n")
    w("License: MIT\n")
    w(MIT_TEXT + "\n")
    w("\n")
    w("License: Apache-2.0\n")
    w(" On Debian systems, the full text of the Apache License, Version 2.0 can be\n")
    w(" found in the file '/usr/share/common-licenses/Apache-2.0'.\n")
    w("\n")
    w("License: GPL-2\n")
    w(" On Debian systems, the full text of the GNU General Public License version 2\n")
    w(" can be found in the file '/usr/share/common-licenses/GPL-2'.\n")
    for spdx in sorted(needed):
        w("\n")
        w(f"License: {spdx}\n")
        w(TEXTS[spdx] + "\n")


if __name__ == "__main__":
    main()
