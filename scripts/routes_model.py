#!/usr/bin/env python3
"""An independent model of the routes `revisit run` gives hosts (crates/core/src/balance.rs and
src/job/routing.rs), for cross-checking the run summary's worker_pages_max_over_mean: prints, for
2, 4, 8 and 16 workers, the heavy hosts placed and the busiest worker's pages over the mean, by
the sampled routes and by an even split of the hash space.

    .venv/bin/python scripts/routes_model.py bench-data/10000000   # a folder with pages/*.parquet

Needs pyarrow and xxhash. The host column is taken for the politeness key as it is (as in `gen`'s sets,
whose names are normal already). Each worker samples the first 32K rows of the row group in the middle of
its share of the row groups; a host is heavy when every sample keeps it (1/(256 p) of its rows or
more) and it has 1/(64 p) of all sampled rows; heavy hosts go heaviest first (ties by identity) to
the least loaded worker; every other host goes by bits 64-95 of its identity into intervals
proportional to what each worker lacks of an even share.
"""
import pyarrow.parquet as pq, pyarrow.compute as pc, glob, sys, xxhash, collections, bisect
d=sys.argv[1]
fs=sorted(glob.glob(d+'/pages/*.parquet'))
units=[(f,g) for f in fs for g in range(pq.ParquetFile(f).metadata.num_row_groups)]
counts=collections.Counter()
for f in fs:
    vc=pc.value_counts(pq.read_table(f,columns=['host'])['host'].combine_chunks())
    for v,c in zip(vc.field('values').to_pylist(), vc.field('counts').to_pylist()): counts[v]+=c
total=sum(counts.values())
hid={h:xxhash.xxh3_128_intdigest(h.encode(),seed=0x686f7374) for h in counts}
for peers in [2,4,8,16]:
    n=len(units); agg=collections.Counter(); kept=collections.Counter(); rows=0
    for i in range(peers):
        f,g=units[(2*i+1)*n//(2*peers)]
        s=collections.Counter(pq.ParquetFile(f).read_row_group(g,columns=['host']).slice(0,32768)['host'].to_pylist())
        r=sum(s.values()); rows+=r
        for k,c in s.items():
            if c*peers*256>=r: agg[k]+=c; kept[k]+=1
    heavy=sorted([(-c,hid[k]) for k,c in agg.items() if kept[k]==peers and c*peers*64>=rows])
    load=[0]*peers; place={}
    for negc,i in heavy:
        w=min(range(peers), key=lambda w:(load[w],w)); load[w]+=-negc*peers; place[i]=w
    lack=[max(0,rows-l) for l in load]; tot=sum(lack); ends=[]; acc=0
    for l in lack: acc+=l; ends.append(acc*2**32//tot)
    real=[0]*peers
    for k,c in counts.items():
        i=hid[k]
        w=place[i] if i in place else bisect.bisect_right(ends,(i>>64)&0xffffffff)
        real[w]+=c
    even=[0]*peers
    for k,c in counts.items(): even[((hid[k]>>64)&0xffffffff)*peers>>32]+=c
    print(d.split("/")[-1], peers, "workers:", len(heavy), "heavy hosts, busiest over mean", round(max(real)/(total/peers),4), "even split", round(max(even)/(total/peers),4))
