#!/usr/bin/env python3
"""Compares two output trees written by scripts/compare-outputs.sh, one line per case.

    python3 scripts/compare_outputs.py BEFORE_TREE AFTER_TREE [EXPECTED]

A case is a folder SET/CASE of the tree (its command's stdout, stderr, rc and outputs). Every file
present in either tree is compared; a file missing on one side is a difference.
- Parquet: schema (names, types, nullability), key-value metadata (every key), row count, and every
  column to the bit: validity masks, then values, floats by their bit patterns (so NaN and -0.0
  count). Content equal but bytes not (the writer is deterministic, so this should not happen) is
  a warning, with what differs in the file's layout.
- JSON (*.json, and stdout that parses as JSON): equal after dropping the timing and machine keys
  at any depth (keys starting with "seconds", "peak_rss_bytes" and "run_id"), key order and number types
  included. A manifest's per-file `bytes` must match where the two files are byte-identical; where
  they are not, that is the file's own difference, reported with the file.
- stdout/stderr text: byte for byte after masking what differs from run to run whatever the binary
  (VOLATILE); an output folder's lock (.NAME.lock) by its presence only (it names the run and
  process that held it). Every other file (CSV, SVG, rc, _SUCCESS): byte for byte, and so is
  every file of a case named gen-* (gen's Parquet files are meant to be byte-for-byte
  reproducible).
EXPECTED (default scripts/compare-expected.txt) lists the differences a change makes on purpose,
one per line, each with why in the comment above it:
- `REGEX ALLOWANCE`: REGEX is matched against "CASE FILE WHERE", WHERE a JSON path ($.a.b[0]), or
  `metadata KEY` for a Parquet file's key-value metadata, or `text` for a text file or output, or
  `bytes` for a gen file of the same content in other bytes; ALLOWANCE is `rel=X` (numbers within
  X relative) or `any`.
- `rename-path REGEX REPLACEMENT`: a file of the before tree is compared with the after tree's file
  at re.sub(REGEX, REPLACEMENT, its path) (a partition folder renamed, say).
- `rename-column OLD NEW`: a Parquet column OLD before is NEW after (compared as the same column).
A case whose only differences are expected prints `expected`, with them, and does not fail.
With COMPARE_VERBOSE=1 every expected difference is printed, not only the first of a case.
Exits 1 if any case differs otherwise. Needs pyarrow only (Array.view reinterprets float bits as
integers).
"""
import json
import os
import re
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

# Text that varies between two runs of the same binary: run's timings and peak RSS, sweep's
# timings, and timely's connection messages (they depend on which process of a cluster starts
# first and whether the other was listening yet); and the binary's own file name in usage lines.
VOLATILE = [
    (re.compile(r"^Usage: \S+ ", re.M), "Usage: <bin> "),
    (re.compile(r"^  seconds: .*$", re.M), "  seconds: <masked>"),
    (re.compile(r" in [0-9.]+ s \(load [0-9.]+ s,"), " in <s> s (load <s> s,"),
    (re.compile(r"^awaiting connections .*\n", re.M), ""),
    (re.compile(r"^worker \d+:\terror connecting .*\n", re.M), ""),
]


def is_timing_key(key):
    # run_id: a manifest names the run that wrote it (a clock and a process id)
    return key.startswith("seconds") or key in ("peak_rss_bytes", "run_id")


def drop_timings(value):
    if isinstance(value, dict):
        return {k: drop_timings(v) for k, v in value.items() if not is_timing_key(k)}
    if isinstance(value, list):
        return [drop_timings(v) for v in value]
    return value


def json_diffs(a, b, where="$"):
    """Every difference between two parsed JSON values, as (path, before, after)."""
    if isinstance(a, dict) and isinstance(b, dict):
        diffs = [(f"{where}.{k}", a[k], "(absent)") for k in a if k not in b]
        diffs += [(f"{where}.{k}", "(absent)", b[k]) for k in b if k not in a]
        common_a, common_b = [k for k in a if k in b], [k for k in b if k in a]
        if common_a != common_b:
            diffs.append((where, f"key order {common_a}", f"{common_b}"))
        return diffs + [d for k in common_a for d in json_diffs(a[k], b[k], f"{where}.{k}")]
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return [(where, f"{len(a)} items", f"{len(b)} items")]
        return [d for i, (x, y) in enumerate(zip(a, b)) for d in json_diffs(x, y, f"{where}[{i}]")]
    # Same type and same repr, as the file shows them: 1 vs 1.0 and 0.0 vs -0.0 differ.
    if type(a) is not type(b) or repr(a) != repr(b):
        return [(where, a, b)]
    return []


def read_expected(path):
    """(pattern, allowance) pairs from an EXPECTED file (allowance ("rel", x) or ("any",)); path
    renames go to PATH_RENAMES, column renames to COLUMN_RENAMES."""
    rules = []
    if not path.is_file():
        return rules
    for line in path.read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("rename-path "):
            _, pattern, replacement = line.split()
            PATH_RENAMES.append((re.compile(pattern), replacement))
            continue
        if line.startswith("rename-column "):
            _, old, new = line.split()
            COLUMN_RENAMES[old] = new
            continue
        pattern, allowance = line.rsplit(maxsplit=1)
        rule = ("any",) if allowance == "any" else ("rel", float(allowance.split("=", 1)[1]))
        rules.append((re.compile(pattern), rule))
    return rules


PATH_RENAMES = []
COLUMN_RENAMES = {}


def renamed(rel):
    """The after tree's path of a before tree's file."""
    text = str(rel)
    for pattern, replacement in PATH_RENAMES:
        text = pattern.sub(replacement, text)
    return Path(text)


def expected(where, a, b, rules):
    for pattern, rule in rules:
        if not pattern.search(where):
            continue
        if rule[0] == "any":
            return True
        if isinstance(a, (int, float)) and isinstance(b, (int, float)):
            if abs(a - b) <= rule[1] * max(abs(a), abs(b)):
                return True
    return False


EXPECTED_RULES = []


def compare_json(path_a, path_b, name):
    """The unexpected differences of two JSON files as text (or None), and the expected ones."""
    da = drop_timings(json.loads(path_a.read_bytes()))
    db = drop_timings(json.loads(path_b.read_bytes()))
    if path_a.name == "manifest.json":
        drop_sizes_of_differing_files(da, db, path_a.parent, path_b.parent)
        for f in da.get("files", []):  # the before tree's paths as the after tree names them
            f["path"] = str(renamed(Path(str(f.get("path")))))
    unexpected, allowed = [], []
    for where, a, b in json_diffs(da, db):
        text = f"{where}: {a!r} != {b!r}"
        key = expected_case(name, where)
        (allowed if expected(key, a, b, EXPECTED_RULES) else unexpected).append(text)
    return (unexpected[0] if unexpected else None), allowed


def drop_sizes_of_differing_files(da, db, dir_a, dir_b):
    """Takes `bytes` out of both manifests' entries whose files differ in bytes: that is the file's
    own difference, reported once with the file (DIFFERENT, or a WARNING for a Parquet file of
    equal content). Where the files are byte-identical the sizes stay, and must match."""
    for fa, fb in zip(da.get("files", []), db.get("files", [])):
        a, b = dir_a / str(fa.get("path")), dir_b / str(fb.get("path"))
        if not (a.is_file() and b.is_file() and a.read_bytes() == b.read_bytes()):
            fa.pop("bytes", None)
            fb.pop("bytes", None)


def first_true(mask):
    return pc.index(mask.fill_null(False), True).as_py()


def column_diff(name, a, b):
    """The first difference between two arrays of the same type, or None."""
    valid_a, valid_b = a.is_valid(), b.is_valid()
    if not valid_a.equals(valid_b):
        row = first_true(pc.not_equal(valid_a, valid_b))
        return f"column {name}: null at row {row} on one side only ({a[row]} != {b[row]})"
    va, vb = a, b
    if pa.types.is_floating(a.type):
        bits = {16: pa.uint16(), 32: pa.uint32(), 64: pa.uint64()}[a.type.bit_width]
        va, vb = a.view(bits), b.view(bits)
    if not va.equals(vb):  # nulls are in the same places: equals skips them
        row = first_true(pc.not_equal(va, vb))
        bits = f" (bits {va[row].as_py():#x} != {vb[row].as_py():#x})" if va is not a else ""
        return f"column {name}: row {row}: {a[row].as_py()!r} != {b[row].as_py()!r}{bits}"
    return None


def expected_case(name, where):
    """The "CASE FILE WHERE" text EXPECTED's patterns match."""
    parts = Path(name).parts
    return f"{parts[1] if len(parts) > 1 else name} {Path(name).name} {where}"


def compare_parquet(path_a, path_b, name, warnings, allowed):
    fa, fb = pq.ParquetFile(path_a), pq.ParquetFile(path_b)
    fields_a = [(COLUMN_RENAMES.get(f.name, f.name), str(f.type), f.nullable) for f in fa.schema_arrow]
    fields_b = [(f.name, str(f.type), f.nullable) for f in fb.schema_arrow]
    if fields_a != fields_b:
        return f"schema {fields_a} != {fields_b}"
    renames = [f"{a.name} -> {COLUMN_RENAMES[a.name]}" for a in fa.schema_arrow if a.name in COLUMN_RENAMES]
    if renames:
        allowed.append(f"{Path(name).name}: column {', '.join(renames)}")
    meta_a, meta_b = fa.metadata.metadata or {}, fb.metadata.metadata or {}
    # ARROW:schema (the Arrow schema with its metadata, serialised) last: any other key that
    # differs changes it too, and the other key says what.
    for key in sorted(meta_a.keys() | meta_b.keys(), key=lambda k: (k == b"ARROW:schema", k)):
        if meta_a.get(key) != meta_b.get(key):
            text = f"metadata {key.decode()}: {meta_a.get(key)!r:.120} != {meta_b.get(key)!r:.120}"
            if expected(expected_case(name, f"metadata {key.decode()}"), None, None, EXPECTED_RULES):
                allowed.append(f"{Path(name).name}: {text}")
            else:
                return text
    if fa.metadata.num_rows != fb.metadata.num_rows:
        return f"{fa.metadata.num_rows} rows != {fb.metadata.num_rows}"
    # ParquetFile.read reads the file alone (no crawler=NNN partition column from the folder).
    ta, tb = fa.read(), fb.read()
    for i, (field_name, _, _) in enumerate(fields_a):
        d = column_diff(field_name, ta.column(i).combine_chunks(), tb.column(i).combine_chunks())
        if d:
            return d
    if path_a.read_bytes() != path_b.read_bytes() and not allowed:
        warnings.append(f"{name}: same content, different bytes: {why_bytes_differ(fa, fb)}")
    return None


def why_bytes_differ(fa, fb):
    """What in the layout of two Parquet files of equal content differs."""
    ma, mb = fa.metadata, fb.metadata
    if ma.created_by != mb.created_by:
        return f"written by {ma.created_by!r}, now {mb.created_by!r}"
    groups_a = [ma.row_group(i).num_rows for i in range(ma.num_row_groups)]
    groups_b = [mb.row_group(i).num_rows for i in range(mb.num_row_groups)]
    if groups_a != groups_b:
        return f"row groups of {groups_a} rows, now {groups_b}"
    for g in range(ma.num_row_groups):
        for c in range(ma.num_columns):
            ca, cb = ma.row_group(g).column(c), mb.row_group(g).column(c)
            for what in ("compression", "encodings", "is_stats_set"):
                if getattr(ca, what) != getattr(cb, what):
                    return (f"row group {g} column {ca.path_in_schema}: {what} "
                            f"{getattr(ca, what)} != {getattr(cb, what)}")
    return "same writer, row groups, compression and encodings: the pages or statistics differ"


def mask(text):
    for pattern, replacement in VOLATILE:
        text = pattern.sub(replacement, text)
    return text


def text_diff(a, b):
    """The first differing line of two texts, or None."""
    if a == b:
        return None
    lines_a, lines_b = a.splitlines(), b.splitlines()
    for i, (x, y) in enumerate(zip(lines_a, lines_b)):
        if x != y:
            return f"line {i + 1}: {x!r:.150} != {y!r:.150}"
    return f"{len(lines_a)} lines != {len(lines_b)} (or the line ends differ)"


def compare_file(path_a, path_b, name, warnings, allowed):
    """The difference between two files of the same name, or None; differences that
    EXPECTED allows go to `allowed`."""
    if path_a.suffix == ".parquet":
        return compare_parquet(path_a, path_b, name, warnings, allowed)
    is_output = path_a.name.endswith(("stdout", "stderr"))
    if path_a.suffix == ".json" or is_output:
        try:
            d, ok = compare_json(path_a, path_b, name)
            allowed.extend(f"{Path(name).name}: {x}" for x in ok)
            return d
        except ValueError:  # not JSON (or not on both sides): compared as text
            pass
    a, b = path_a.read_bytes(), path_b.read_bytes()
    if path_a.name.startswith(".") and path_a.name.endswith(".lock"):
        # an output folder's lock names the run, process and machine that held it last
        return None
    if is_output:
        d = text_diff(mask(a.decode(errors="replace")), mask(b.decode(errors="replace")))
    elif a == b:
        return None
    else:
        try:  # CSV, SVG, rc: say which line
            d = text_diff(a.decode(), b.decode())
        except UnicodeDecodeError:
            d = f"binary contents differ ({len(a)} bytes, {len(b)} bytes)"
    if d and expected(expected_case(name, "text"), None, None, EXPECTED_RULES):
        allowed.append(f"{Path(name).name}: {d}")
        return None
    return d


def files(root):
    return {p.relative_to(root) for p in root.rglob("*") if p.is_file()}


def main():
    before, after = Path(sys.argv[1]), Path(sys.argv[2])
    default = Path(__file__).with_name("compare-expected.txt")
    EXPECTED_RULES.extend(read_expected(Path(sys.argv[3]) if len(sys.argv) > 3 else default))
    files_b = files(after)
    # each before file under the name it has after (a partition folder renamed, say)
    files_a = {renamed(rel): rel for rel in files(before)}
    if not files_a and not files_b:
        sys.exit(f"compare_outputs: nothing to compare in {before} and {after}")
    # A case is the first two levels, SET/CASE, as compare-outputs.sh lays the trees out.
    cases = {}
    for rel in sorted(files_a.keys() | files_b):
        cases.setdefault(Path(*rel.parts[:2]), []).append(rel)
    different, as_expected, warnings = 0, 0, []
    for case, rels in sorted(cases.items()):
        problems, allowed = [], []
        for rel in rels:
            name = rel.relative_to(case)
            if rel not in files_a or rel not in files_b:
                problems.append(f"{name}: only {'after' if rel in files_b else 'before'}")
                continue
            before_rel = files_a[rel]
            if before_rel != rel:
                allowed.append(f"{name}: was {before_rel.relative_to(case)}")
            try:
                d = compare_file(before / before_rel, after / rel, str(rel), warnings, allowed)
            except Exception as e:  # an unreadable file on either side is a difference too
                d = f"cannot compare: {type(e).__name__}: {e}"
            # gen promises byte-for-byte reproducible files (README), so bytes count there.
            if not d and case.name.startswith("gen-") and name.parts[0] == "out":
                if (before / before_rel).read_bytes() != (after / rel).read_bytes():
                    d = "same content, different bytes (gen output must be byte-identical)"
                    if expected(expected_case(str(rel), "bytes"), None, None, EXPECTED_RULES):
                        allowed.append(f"{name}: {d}")
                        d = None
            if d:
                problems.append(f"{name}: {d}")
        if problems:
            different += 1
            more = f" (and {len(problems) - 1} more files)" if len(problems) > 1 else ""
            print(f"DIFFERENT  {case}: {problems[0]}{more}")
        elif allowed:
            as_expected += 1
            more = f" (and {len(allowed) - 1} more)" if len(allowed) > 1 else ""
            print(f"expected   {case}: {allowed[0]}{more}")
            if os.environ.get("COMPARE_VERBOSE"):
                for a in allowed[1:]:
                    print(f"             {a}")
        else:
            print(f"same       {case} ({len(rels)} files)")
    for w in warnings:
        print(f"WARNING    {w}")
    same = len(cases) - different - as_expected
    print(f"{len(cases)} cases: {same} same, {as_expected} with expected differences only, "
          f"{different} different; {len(warnings)} warnings")
    sys.exit(1 if different else 0)


if __name__ == "__main__":
    main()
