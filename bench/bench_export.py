"""`dk-mirror export FORMAT` on the English Chrome corpus: time, memory, and incrementality.

Usage: python -m bench.bench_export [--formats md site llms docset zim] [--docs N]
Each export runs as a user runs it (`python -m mirror export ...`, a fresh process), timed and
its peak private memory sampled. The baseline, measured in the same run, is a fresh process that
opens the store and reads every selected document (what any export must do at least).
Then, per format: a second export with no change (must write 0 files), an export to a second
folder (must be byte-identical), and one after changing one page (says how many files).
Targets (issue 30): each export under 60 s and 200 MB on the 1,984-page corpus.
zim (when the zim extra is installed) is one file: "files" is 1, and its twin is compared
entry by entry (libzim's UUIDs make the bytes differ; see mirror/exports/zim.py).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import resource
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from bench.common import PrivatePeak, add_corpus_option, english_corpus
from mirror.records import read_documents
from mirror.store.store import Store

# The CPU seconds of the last process `run` waited for: on a machine shared with other work,
# wall time measures the queue for a core as much as the export.
CPU_SECONDS = [0.0]
READ_ALL = (
    "import sys\n"
    "from mirror.config import Settings\n"
    "from mirror.service import Mirror\n"
    "from mirror.exports.source import Selection, read_documents\n"
    "with Mirror(Settings(db_url=sys.argv[1], offline=True)) as m:\n"
    "    n = sum(len(d.content or '') for d in read_documents(m._ctx().store, Selection()))\n"
)


def run(args: list[str]) -> tuple[float, int, str]:
    """Wall seconds, peak private bytes and stdout of one fresh `python` process (its CPU
    seconds are added to CPU_SECONDS[0])."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    peak = PrivatePeak(proc.pid)
    out, err = proc.communicate()
    seconds = time.perf_counter() - start
    memory = peak.stop()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    CPU_SECONDS[0] = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if proc.returncode != 0:
        raise SystemExit(f"bench: {' '.join(args)} failed:\n{err.decode()}")
    return seconds, memory, out.decode()


# Options a format is benched with: the docset's feed (and archive) names where OUT will be
# served; one fixed URL, so the twin export is byte-identical.
FORMAT_ARGS = {"docset": ["--feed-url", "https://docs.example/dk-mirror"]}


def export(url: str, fmt: str, out: Path) -> tuple[float, int, dict[str, object]]:
    """One `dk-mirror export` process: seconds, peak bytes, its --json summary."""
    command = ["-m", "mirror", "export", fmt, str(out), "--db", url, "--offline", "--json"]
    seconds, peak, text = run([*command, *FORMAT_ARGS.get(fmt, [])])
    return seconds, peak, json.loads(text)


def tree(root: Path) -> dict[str, bytes]:
    """Every file under `root` by relative path (a one-file export: that file)."""
    if root.is_file():
        return {root.name: root.read_bytes()}
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def zim_entries(path: Path) -> dict[str, tuple[str, str, bytes]]:
    """A ZIM's entries (title, mimetype, bytes) by path, but for its two Xapian indexes."""
    from libzim.reader import Archive

    archive, found = Archive(path), {}
    for i in range(archive.all_entry_count):
        entry = archive._get_entry_by_id(i)
        item = entry.get_item()
        if not item.mimetype.endswith("+xapian"):
            found[entry.path] = (entry.title, item.mimetype, bytes(item.content))
    return found


def same(out: Path, twin: Path) -> str:
    """Whether two exports are the same: byte for byte, or (zim) entry for entry."""
    if out.suffix == ".zim":
        return f"same entries: {zim_entries(out) == zim_entries(twin)} (bytes differ: UUIDs)"
    return f"byte-identical twin: {tree(out) == tree(twin)}"


def change_one(url: str, name: str, round_: int) -> None:
    """Append a line to one page, as a refresh that found it changed would."""
    store = Store.open(url)
    try:
        doc = store.get_many([name])[name].document
        text = (doc.content or "") + f"\nChanged by bench_export, round {round_}.\n"
        store.put([replace(doc, content=text)], fetched_at=1.0 + round_, upstream="bench")
    finally:
        store.close()


def main() -> None:
    """Build a store of the corpus, then measure each format."""
    parser = argparse.ArgumentParser()
    has_zim = importlib.util.find_spec("libzim") is not None
    parser.add_argument(
        "--formats",
        nargs="+",
        default=["md", "site", "llms", "docset"] + (["zim"] if has_zim else []),
    )
    parser.add_argument("--docs", type=int, default=0, help="only the first N pages (0: all)")
    add_corpus_option(parser)
    args = parser.parse_args()
    docs = list(read_documents(english_corpus(args.corpus)))
    if args.docs:
        docs = docs[: args.docs]
    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:///{Path(tmp) / 'corpus.sqlite3'}"
        store = Store.open(url)
        try:
            store.put(docs, fetched_at=0.0, upstream="bench")
        finally:
            store.close()
        base_s, base_peak, _ = run(["-c", READ_ALL, url])
        base_cpu = CPU_SECONDS[0]
        print(
            f"{len(docs)} pages; baseline (a process reading them all): {base_s:.2f} s "
            f"({base_cpu:.2f} s CPU), {base_peak / 1e6:.0f} MB"
        )
        victim = docs[len(docs) // 2].name
        for round_, fmt in enumerate(args.formats):
            out, twin = Path(tmp) / fmt, Path(tmp) / f"{fmt}-twin"
            if fmt == "zim":  # one file, not a folder
                out, twin = out.with_suffix(".zim"), twin.with_suffix(".zim")
            seconds, peak, first = export(url, fmt, out)
            cpu = CPU_SECONDS[0]
            again_s, _, again = export(url, fmt, out)
            export(url, fmt, twin)
            identical = same(out, twin)
            change_one(url, victim, round_)
            _, _, changed = export(url, fmt, out)
            size = sum(len(v) for v in tree(out).values())
            ok_time = "met" if seconds < 60 else "MISSED"
            ok_memory = "met" if peak < 200e6 else "MISSED"
            print(
                f"{fmt:5} {seconds:6.2f} s ({seconds / base_s:.2f}x baseline; target < 60 s: "
                f"{ok_time}), {cpu:.2f} s CPU ({cpu / base_cpu:.2f}x)  peak {peak / 1e6:4.0f} MB (target < 200 MB: {ok_memory})  "
                f"{first['files']} files, {size / 1e6:.1f} MB"
            )
            print(
                f"      no change: {again['written']} written, {again['unchanged']} unchanged "
                f"({again_s:.2f} s, {again_s / base_s:.2f}x)  {identical}  "
                f"one page changed: {changed['written']} written, {changed['removed']} removed"
            )
            for note in first.get("notes") or []:
                print(f"      note: {note}")


if __name__ == "__main__":
    main()
