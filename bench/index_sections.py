#!/usr/bin/env python3
# The bytes of each section of a cfs index file (format 2), in all and per chunk:
#   python3 bench/index_sections.py .cfs/index.cache
import struct, sys
b = open(sys.argv[1], 'rb').read()
o = 64 + 4 + 32 + 8 + 160
for _ in range(2):
    n = struct.unpack_from('<I', b, o)[0]; o += 4 + 32 * n
n_chunks, total = struct.unpack_from('<QQ', b, o); o += 16
ns = struct.unpack_from('<I', b, o)[0]; o += 4
names = 'Docs DocEnds DocIds DocChunkEnds DocChunks Paths PathEnds PathIds Ids Records Lens Norms Missing Vectors TermEnds TermBytes PostingEnds Postings StringEnds StringBytes'.split()
for i in range(ns):
    off, ln = struct.unpack_from('<QQ', b, o + 48 * i)
    print(f"{names[i]:12} {ln/1e6:9.1f} MB {ln/n_chunks:8.1f} B/chunk")
print(f"total {len(b)/1e6:.1f} MB {len(b)/n_chunks:.1f} B/chunk, {n_chunks} chunks")
