"""No synchronisation in the AscendC kernels repeats one that nothing has made stale: a source scan
of op_kernel/*.h for two syncs of the same event (Sync<HardEvent::E>(), SetFlag<HardEvent::E>,
PipeBarrier<P>, SyncAll) with no work between them. A dead sync still drains a pipe.

The API's own waits count as syncs: count-form ReduceSum ends with V -> S, S -> V and S -> MTE3
waits after its work (asc-devkit impl/basic_api/dav_c220/kernel_operator_vec_reduce_impl.h,
ReduceSumImpl), so a Sync<HardEvent::V_S>() right after it is a repeat. The scan reads statements
in source order; the start of a function, `return` and `else` begin a new sequence (what
follows them does not run right after what precedes them)."""
import re

import pytest

import twin

SYNC_FORMS = [(re.compile(r"\bSync<HardEvent::(\w+)>\s*\("), "{}"),
              (re.compile(r"\bSetFlag<HardEvent::(\w+)>\s*\("), "{}"),
              (re.compile(r"\bPipeBarrier<(\w+)>\s*\("), "PipeBarrier<{}>"),
              (re.compile(r"\bSyncAll\s*(?:<[^>]*>)?\s*\(()"), "SyncAll")]
# the waits an API call ends with, after its own work
API_WAITS = [(re.compile(r"\bReduceSum\s*\("), {"V_S", "S_V", "S_MTE3"})]
WAIT_HALF = re.compile(r"^(if\s*\(.*\)\s*)?WaitFlag<")  # the second half of a SetFlag/WaitFlag pair
CONTROL = re.compile(r"^((if|for|while|switch)\s*\(.*|do)?$")  # a block that continues the sequence
RESTART = re.compile(r"^(else|return|continue|break)\b")  # what follows does not run right after what precedes


def statements(text):
    """(line number, statement text, ends a block header) in source order: split at ';', '{'
    and '}' outside parentheses; comments and preprocessor lines removed."""
    text = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group().count("\n"), text, flags=re.S)
    text = "\n".join("" if line.lstrip().startswith("#") else line.split("//")[0] for line in text.splitlines())
    found, start, depth, line = [], 0, 0, 1
    for i, ch in enumerate(text):
        if ch == "\n":
            line += 1
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif depth == 0 and ch in ";{}":
            statement = " ".join(text[start:i].split())
            found.append((line, statement, ch == "{"))
            start = i + 1
    return found


def repeated_syncs(text):
    """(line, event) of every sync that repeats one of the same event with no work in between."""
    repeats, fresh = [], set()
    for line, statement, opens_block in statements(text):
        if opens_block:
            if not CONTROL.match(statement):
                fresh = set()  # a function, class or else branch begins
            continue
        if RESTART.match(statement):
            fresh = set()
        events = [form.format(m.group(1)) for pattern, form in SYNC_FORMS for m in pattern.finditer(statement)]
        waits = [w for pattern, w in API_WAITS if pattern.search(statement)]
        if events:
            repeats += [(line, event) for event in events if event in fresh]
            fresh.update(events)
        elif waits:
            fresh = set().union(*waits)  # its work, then its own waits
        elif statement and not WAIT_HALF.match(statement) and not RESTART.fullmatch(statement):
            fresh = set()  # work: what was synchronised may be stale again
    return repeats


def kernel_headers():
    root = twin.ascendc_dir() / "op_kernel"
    return {p.name: p.read_text() for p in sorted(root.glob("*.h"))}


def test_no_kernel_header_repeats_a_sync_without_work_between():
    found = {name: repeated_syncs(text) for name, text in kernel_headers().items()}
    assert not any(found.values()), {name: r for name, r in found.items() if r}


def test_the_scan_sees_every_sync_of_the_kernels():
    """As many sync statements as lines that hold one (each sync of the kernels is on its own line)."""
    for name, text in kernel_headers().items():
        counted = len([s for _, s, _ in statements(text) if any(p.search(s) for p, _ in SYNC_FORMS)])
        lines = [line for line in text.splitlines() if any(p.search(line.split("//")[0]) for p, _ in SYNC_FORMS)]
        assert counted == len(lines), name
    assert sum(len(statements(text)) for text in kernel_headers().values()) > 500


# ReduceSum's own waits follow it on both branches
REDUCE = ("void F() {\n  if (a) {\n    ReduceSum(r, s, w, n);\n  } else {\n    ReduceSum(r, p, w, n);\n  }\n"
          "  Sync<HardEvent::V_S>();\n  return r.GetValue(0);\n}\n")


@pytest.mark.parametrize("source, want", [
    (REDUCE, [(7, "V_S")]),  # the V -> S wait ReduceSum already made
    (REDUCE.replace("Sync<HardEvent::V_S>();", "Sync<HardEvent::S_MTE3>();"), [(7, "S_MTE3")]),
    (REDUCE.replace("Sync<HardEvent::V_S>();", "Sync<HardEvent::MTE2_S>();"), []),  # not one of its waits
    ("void F() {\n  Sync<HardEvent::MTE3_V>();\n  // a comment is no work\n  Sync<HardEvent::MTE3_V>();\n}\n",
     [(4, "MTE3_V")]),
    ("void F() {\n  SetFlag<HardEvent::V_S>(id);\n  WaitFlag<HardEvent::V_S>(id);\n  SetFlag<HardEvent::V_S>(id);\n}",
     [(4, "V_S")]),
    ("void F() {\n  if (a) Sync<HardEvent::MTE3_S>();\n  Sync<HardEvent::MTE3_S>();\n}\n", [(3, "MTE3_S")]),
    ("void F() {\n  PipeBarrier<PIPE_ALL>();\n  SyncAll();\n  PipeBarrier<PIPE_ALL>();\n}\n",
     [(4, "PipeBarrier<PIPE_ALL>")]),
    ("void F() {\n  Sync<HardEvent::V_S>();\n  x = t.GetValue(0);\n  Sync<HardEvent::V_S>();\n}\n", []),  # work between
    ("void F() {\n  Sync<HardEvent::V_S>();\n}\nvoid G() {\n  Sync<HardEvent::V_S>();\n}\n", []),  # two functions
    ("void F() {\n  if (a) {\n    Sync<HardEvent::V_S>();\n  } else {\n    Sync<HardEvent::V_S>();\n  }\n}\n", []),
    ("void F() {\n  Sync<HardEvent::S_V>();\n  return;\n  Sync<HardEvent::S_V>();\n}\n", []),
])
def test_the_scan_flags_repeats_only(source, want):
    assert repeated_syncs(source) == want


def test_the_scan_flags_repeats_inserted_into_kernel_headers():
    """Mutated copies of real headers: a second MTE2 -> S wait right after the first; a V -> S wait
    before each scalar read of a reduction result (after ReduceSum, or after Rstd's own V -> S)."""
    headers = kernel_headers()
    text = headers["group_norm_silu_ms_chunked.h"]
    line = "  Sync<HardEvent::MTE2_S>();\n"
    assert text.count(line) == 1 and repeated_syncs(text) == []
    mutated = text.replace(line, line + "  // the loads are surely done now\n" + line)
    assert [event for _, event in repeated_syncs(mutated)] == ["MTE2_S"]
    text = headers["group_norm_silu_ms.h"]
    read = "    return red.GetValue(0);\n"
    assert text.count(read) >= 2 and repeated_syncs(text) == []
    mutated = text.replace(read, "    Sync<HardEvent::V_S>();\n" + read)
    assert [event for _, event in repeated_syncs(mutated)] == ["V_S"] * text.count(read)
