#!/usr/bin/env python3
# The bytes of each section of a cfs index or delta file (format 3), in all and per
# chunk; with --resident PID, also how much of each section that process has mapped
# resident (from /proc/PID/smaps and /proc/PID/pagemap; needs root):
#   python3 bench/index_sections.py .cfs/index.cache [--resident PID]
# To see a search's pages at its exit:
#   gdb -q -batch -ex 'catch syscall exit_group' -ex run \
#     -ex 'python import gdb; print("PID", gdb.selected_inferior().pid)' \
#     -ex 'shell python3 bench/index_sections.py .cfs/index.cache --resident $PID' ...
import os, struct, sys

NAMES = ('Docs DocEnds DocIds DocChunkEnds DocChunks Paths PathEnds PathIds Ids Records '
         'Lens Norms Missing Vectors Codes TermEnds TermBytes PostingEnds Postings '
         'StringEnds StringBytes Dead DocBuckets PathBuckets').split()
PAGE = os.sysconf('SC_PAGE_SIZE')


def sections(path):
    with open(path, 'rb') as f:
        head = f.read(32)
        assert head[:8] == b'CFSINDEX', 'not an index file'
        fmt = struct.unpack_from('<I', head, 8)[0]
        assert fmt == 3, f'format {fmt}, this script reads 3'
        hlen = struct.unpack_from('<Q', head, 24)[0]
        b = head + f.read(hlen)
    o = 32 + 32 + 4 + 32 + 8 + 160  # prefix, model, dim, root, sequence, table roots
    for _ in range(2):  # bucket roots of chunks and paths
        n = struct.unpack_from('<I', b, o)[0]
        o += 4 + 32 * n
    n_chunks, _total = struct.unpack_from('<QQ', b, o)
    o += 16 + 32  # and the base's hash
    ns = struct.unpack_from('<I', b, o)[0]
    o += 4
    out = []
    for i in range(ns):
        off, ln = struct.unpack_from('<QQ', b, o + 48 * i)
        out.append((NAMES[i], off, ln))
    return n_chunks, out


def resident_pages(pid, path):
    """File page numbers of `path` that `pid` has resident."""
    real = os.path.realpath(path)
    pages = set()
    with open(f'/proc/{pid}/maps') as maps, open(f'/proc/{pid}/pagemap', 'rb') as pm:
        for line in maps:
            parts = line.split()
            if len(parts) < 6 or parts[5] != real:
                continue
            start, end = (int(x, 16) for x in parts[0].split('-'))
            file_off = int(parts[2], 16)
            pm.seek(start // PAGE * 8)
            entries = pm.read((end - start) // PAGE * 8)
            for i in range(len(entries) // 8):
                if struct.unpack_from('<Q', entries, 8 * i)[0] >> 63:
                    pages.add(file_off // PAGE + i)
    return pages


def main():
    path = sys.argv[1]
    n_chunks, secs = sections(path)
    pages = None
    if '--resident' in sys.argv:
        pages = resident_pages(int(sys.argv[sys.argv.index('--resident') + 1]), path)
    size = os.path.getsize(path)
    for name, off, ln in secs:
        line = f"{name:12} {ln / 1e6:9.1f} MB {ln / max(n_chunks, 1):8.1f} B/chunk"
        if pages is not None:
            first, last = off // PAGE, (off + ln + PAGE - 1) // PAGE
            res = sum(1 for p in range(first, last) if p in pages)
            line += f"  resident {res * PAGE / 1e6:7.1f} MB"
        print(line)
    total = f"total {size / 1e6:.1f} MB {size / max(n_chunks, 1):.1f} B/chunk, {n_chunks} chunks"
    if pages is not None:
        total += f", resident {len(pages) * PAGE / 1e6:.1f} MB"
    print(total)


main()
