"""The stored Markdown's codec: zlib at its levels against zstd (with a dictionary trained on the
corpus) and lz4, on every page of the shared corpus, in one run.

Usage: python -m bench.bench_codec [--corpus DIR] [--docs N] [--rounds N]

The baseline is zlib level 1, the store's codec (mirror/store/db/compression.py). Every time
is this process' CPU time (all its threads), not wall time: on a shared machine it moves far
less with the load, and the codecs differ in CPU alone. Per codec:
- size: the stored bytes / the Markdown bytes, over every page and over the half of the pages
  a dictionary was not trained on (a dictionary is trained on the other half: a fair figure
  for pages written after it was made); and the store file it would make (the imported
  store's file with its zlib 1 content swapped for the codec's; the search index apart);
- import: compressing every page, in MB/s (best of --repeat passes; decompressing likewise), and the import it would make: `Mirror.import_file`
  of the same pages is measured in this run (it compresses each page once with zlib 1), and
  each codec's import is that time with zlib 1's compressing swapped for its own (estimated:
  the store is not changed to measure it);
- warm get of 20: the median of a raw `SELECT name, content ... WHERE name IN (20 names)` on a
  table of this codec's bytes, then decompressing them, and its ratio to zlib 1's (what a
  get's codec-bound part costs); Mirror.get_documents of the same draws is printed beside it,
  to show what share of a whole get that part is;
- sqlite3 shell: whether `sqlar_uncompress(content, length)` in the sqlite3 command-line
  shell (`sqlite3` on PATH, or $SQLITE3) gives the page back: the README's way to read a page
  without dk-mirror.
zstd and lz4 rows need the `zstandard` and `lz4` packages (pip install zstandard lz4; not
dependencies of dk-mirror); without them only the zlib rows print. No target: the figures
inform a decision (issue 32), whose reading is printed under the table.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import sqlite3
import subprocess
import tempfile
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from bench.common import add_corpus_option, corpus_file, median
from mirror.config import Settings
from mirror.models import Document
from mirror.records import read_documents
from mirror.service import Mirror

FILES = (
    "developer.chrome.com-en.jsonl.gz",
    "developer.chrome.com-intl.jsonl.gz",
    "tensorflow.org.jsonl.gz",
)
DICT_BYTES = 112_640  # zstd's own default dictionary size


@dataclass(frozen=True)
class Codec:
    """A way to store a page's bytes."""

    name: str
    pack: Callable[[bytes], bytes]
    unpack: Callable[[bytes], bytes]


def codecs(train: list[bytes]) -> list[Codec]:
    """zlib at levels 1, 6 and 9, then zstd and lz4 where installed."""
    found = [
        Codec(f"zlib {level}", lambda b, lv=level: zlib.compress(b, lv), zlib.decompress)
        for level in (1, 6, 9)
    ]
    try:
        import zstandard
    except ImportError:
        print("zstandard not installed: no zstd rows (pip install zstandard)")
    else:
        trained = zstandard.train_dictionary(DICT_BYTES, train)
        plain = zstandard.ZstdDecompressor()
        with_dict = zstandard.ZstdDecompressor(dict_data=trained)
        for level in (1, 3):
            found.append(
                Codec(
                    f"zstd {level}",
                    zstandard.ZstdCompressor(level=level).compress,
                    plain.decompress,
                )
            )
        for level in (1, 3, 9):
            found.append(
                Codec(
                    f"zstd {level} + dict",
                    zstandard.ZstdCompressor(level=level, dict_data=trained).compress,
                    with_dict.decompress,
                )
            )
    try:
        import lz4.frame
    except ImportError:
        print("lz4 not installed: no lz4 rows (pip install lz4)")
    else:
        found.append(Codec("lz4", lz4.frame.compress, lz4.frame.decompress))
        found.append(
            Codec(
                "lz4 hc 9",
                lambda b: lz4.frame.compress(b, compression_level=9),
                lz4.frame.decompress,
            )
        )
    return found


def best_of(runs: int, func: Callable[[], object]) -> float:
    """The fastest of `runs` timed calls (the least disturbed by other work on the machine)."""
    times = []
    for _ in range(runs):
        start = time.process_time()
        func()
        times.append(time.process_time() - start)
    return min(times)


def import_seconds(paths: list[Path], folder: Path) -> tuple[float, int]:
    """`Mirror.import_file` of every file into a fresh store (the store's codec: zlib 1): its
    CPU seconds, and the store file's bytes once closed (its search index folder apart)."""
    db = folder / "import.sqlite3"
    # Words only: this bench times the codec's write path; the embedding every write now adds
    # by default is timed by bench_import_embed, beside its own baseline.
    with Mirror(Settings(db_url=f"sqlite:///{db}", offline=True, semantic=False)) as m:
        m.stats()  # open and migrate before the clock starts
        start = time.process_time()
        for path in paths:
            m.import_file(path)
        seconds = time.process_time() - start
    with sqlite3.connect(db) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return seconds, db.stat().st_size


def get_seconds(db: Path, draws: list[list[str]]) -> float:
    """Median seconds of Mirror.get_documents of each draw on a store that holds them."""
    with Mirror(Settings(db_url=f"sqlite:///{db}", offline=True)) as mirror:
        for draw in draws[:20]:
            mirror.get_documents(draw)
        times = []
        for draw in draws:
            start = time.process_time()
            mirror.get_documents(draw)
            times.append(time.process_time() - start)
    return median(times)


def raw_get_seconds(conn: sqlite3.Connection, codec: Codec, draws: list[list[str]]) -> float:
    """Median seconds of the raw query of 20 names plus decompressing their content."""
    query = f"SELECT name, content FROM pages WHERE name IN ({','.join('?' * 20)})"
    for draw in draws[:20]:
        conn.execute(query, draw).fetchall()
    times = []
    for draw in draws:
        start = time.process_time()
        for _name, content in conn.execute(query, draw):
            codec.unpack(content).decode("utf-8")
        times.append(time.process_time() - start)
    return median(times)


def shell_reads(db: Path, sample: list[tuple[str, bytes]]) -> str:
    """Whether the sqlite3 shell's sqlar_uncompress gives the sample pages back."""
    shell = os.environ.get("SQLITE3") or shutil.which("sqlite3")
    if not shell:
        return "no shell"
    ok = 0
    for name, text in sample:
        quoted = name.replace("'", "''")
        sql = (
            f"SELECT hex(sqlar_uncompress(content, {len(text)})) FROM pages "
            f"WHERE name = '{quoted}';"
        )
        run = subprocess.run(
            [shell, "-readonly", str(db), sql], capture_output=True, text=True, check=False
        )
        ok += run.returncode == 0 and bytes.fromhex(run.stdout.strip() or "00") == text
    return "yes" if ok == len(sample) else ("no" if ok == 0 else f"{ok}/{len(sample)}")


def main() -> None:
    """Measure every codec on the same pages and print the table."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--docs", type=int, default=0, help="the first N pages (0: all)")
    parser.add_argument("--rounds", type=int, default=300, help="gets of 20 timed per codec")
    parser.add_argument("--repeat", type=int, default=3, help="best of N passes over the pages")
    add_corpus_option(parser)
    args = parser.parse_args()
    paths = [corpus_file(name, args.corpus) for name in FILES]
    docs: list[Document] = [d for path in paths for d in read_documents(path) if d.content]
    docs = docs[: args.docs or None]
    texts = [(d.name, (d.content or "").encode("utf-8")) for d in docs]
    markdown = sum(len(t) for _, t in texts)
    held_out = texts[1::2]  # a dictionary is trained on texts[0::2]
    rng = random.Random(42)
    names = [name for name, _ in texts]
    draws = [rng.sample(names, 20) for _ in range(args.rounds)]
    found = codecs([t for _, t in texts[0::2]])
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        if args.docs:  # the import reads whole files: give it exactly these pages
            paths = [folder / "pages.jsonl"]
            lines = (json.dumps(d.to_api()) + "\n" for d in docs)
            paths[0].write_text("".join(lines), encoding="utf-8")
        imported, store_bytes = import_seconds(paths, folder)
        mirror_get = get_seconds(folder / "import.sqlite3", draws)
        rows = []
        for codec in found:
            packed: list[tuple[str, bytes]] = []

            def pack(codec: Codec = codec, out: list[tuple[str, bytes]] = packed) -> None:
                out[:] = [(name, codec.pack(text)) for name, text in texts]

            def unpack(codec: Codec = codec, blobs: list[tuple[str, bytes]] = packed) -> None:
                for _, blob in blobs:
                    codec.unpack(blob)

            pack_s, unpack_s = best_of(args.repeat, pack), best_of(args.repeat, unpack)
            size = sum(len(b) for _, b in packed)
            half = {name for name, _ in held_out}
            held = sum(len(b) for name, b in packed if name in half)
            db = folder / f"{codec.name.replace(' ', '-')}.sqlite3"
            with sqlite3.connect(db) as conn:
                conn.execute("CREATE TABLE pages (name TEXT PRIMARY KEY, content BLOB)")
                conn.executemany("INSERT INTO pages VALUES (?, ?)", packed)
            conn = sqlite3.connect(db)
            get_s = raw_get_seconds(conn, codec, draws)
            conn.close()
            shell = shell_reads(db, texts[:: max(1, len(texts) // 20)][:20])
            rows.append((codec.name, size, held, pack_s, unpack_s, get_s, shell))
    _print(
        rows,
        len(texts),
        (markdown, sum(len(t) for _, t in held_out)),
        imported,
        mirror_get,
        store_bytes,
    )


def _print(
    rows: list[tuple[str, int, int, float, float, float, str]],
    pages: int,
    markdowns: tuple[int, int],
    imported: float,
    mirror_get: float,
    store_bytes: int,
) -> None:
    markdown, held_markdown = markdowns
    mb = markdown / 1e6
    base = rows[0]  # zlib 1: the store's codec
    print(
        f"{pages:,} pages, {mb:.1f} MB of Markdown; import (zlib 1) {imported:.2f} s CPU; "
        f"Mirror.get_documents of 20 p50 {mirror_get * 1000:.2f} ms CPU; store file (zlib 1) "
        f"{store_bytes / markdown:.2f}x the Markdown bytes, its search index apart"
    )
    head = (
        f"{'codec':16} {'size':>6} {'held-out':>8} {'store':>6} {'pack MB/s':>9} {'import s':>9} "
        f"{'(ratio)':>7} {'unpack MB/s':>11} {'get20 ms':>9} {'(ratio)':>7}  sqlite3 shell"
    )
    print(head)
    for name, size, held, pack_s, unpack_s, get_s, shell in rows:
        import_s = imported - base[3] + pack_s
        print(
            f"{name:16} {size / markdown:6.3f} {held / held_markdown:8.3f} "
            f"{(store_bytes - base[1] + size) / markdown:6.3f} {mb / pack_s:9.0f} "
            f"{import_s:9.2f} {import_s / imported:6.2f}x {mb / unpack_s:11.0f} "
            f"{get_s * 1000:9.3f} {get_s / base[5]:6.2f}x  {shell}"
        )
    print(
        f"baseline: zlib 1 (the store's codec); CPU times; size = stored / Markdown bytes; store ="
        f" the store file with its zlib 1 content swapped for the codec's, / Markdown; import = the "
        f"measured import with its zlib 1 compressing ({base[3]:.2f} s) swapped for the codec's; "
        f"get20 = raw query + decompress, next to Mirror.get_documents {mirror_get * 1000:.2f} ms; "
        "no target"
    )


if __name__ == "__main__":
    main()
