#!/usr/bin/env python3
"""Pure-Python model of the [B, D, T] warp kernels index logic (lanes, halos, reverse, x0,
dL/dlast, dx0, partial iterations, lookback items and the 128-wide descriptor window), checked
against sequential float64 loops. No GPU; mirrors scan_bdt_*_kernel.cuh and
scan/warp/scan_warp_lookback.cuh with 4 lanes of 2 steps (and 32 lanes x 4 entries for the window).

    .venv/bin/python experiments/scan/emulate_bdt.py   # prints "bad 0" twice
"""
import random
import numpy as np
L, V = 4, 2
W = L * V

def fw_ref(a, b, x0, rev):
    T = len(a); x = np.zeros(T); s = x0
    order = range(T-1, -1, -1) if rev else range(T)
    for t in order:
        s = a[t]*s + b[t]; x[t] = s
    return x, s

def bw_ref(a, x, x0, g, dlast, rev):
    T = len(a); order = list(range(T-1, -1, -1)) if rev else list(range(T))
    # forward order v -> physical order[v]
    db = np.zeros(T); da = np.zeros(T)
    nxt = 0.0
    for v in range(T-1, -1, -1):
        t = order[v]
        gv = g[t] + (dlast if v == T-1 else 0)
        a_next = a[order[v+1]] if v+1 < T else 0.0
        db[t] = gv + a_next * nxt
        nxt = db[t]
        xprev = x[order[v-1]] if v > 0 else x0
        da[t] = db[t] * xprev
    dx0 = a[order[0]] * db[order[0]]
    return da, db, dx0

def lanes_of(p, T, u0, fill, desc):
    # returns per lane list of V values in scan order
    out = []
    for l in range(L):
        u = u0 + l*V
        vals = []
        for j in range(V):
            uj = u + j
            if uj < T:
                t = T-1-uj if desc else uj
                vals.append(p[t])
            else:
                vals.append(fill)
        out.append(vals)
    return out

def then(f, s): return (s[0]*f[0], s[0]*f[1] + s[1])
def apply(f, x): return f[0]*x + f[1]

def warp_scan(maps):
    incl = []; acc = None
    for m in maps:
        acc = m if acc is None else then(acc, m)
        incl.append(acc)
    excl = [(1.0, 0.0)] + incl[:-1]
    return excl, incl[-1]

def fw_march(a, b, x0, rev):
    T = len(a); x = np.full(T, np.nan); last = None
    carry = x0; n = (T + W - 1)//W
    for i in range(n):
        A = lanes_of(a, T, i*W, 1.0, rev); B = lanes_of(b, T, i*W, 0.0, rev)
        maps = []
        for l in range(L):
            m = (A[l][0], B[l][0])
            for j in range(1, V): m = then(m, (A[l][j], B[l][j]))
            maps.append(m)
        excl, total = warp_scan(maps)
        for l in range(L):
            s = apply(excl[l], carry); u = i*W + l*V
            fs = T-1-u
            for j in range(V):
                s = A[l][j]*s + B[l][j]
                if u + j < T:
                    t = T-1-(u+j) if rev else u+j
                    x[t] = s
                if j == fs: last = s
        carry = apply(total, carry)
    return x, last

def bw_march(a, x, x0, g, dlast, rev):
    desc = not rev
    T = len(a); da = np.full(T, np.nan); db = np.full(T, np.nan); dx0 = None
    carry = 0.0; a_before = 0.0; n = (T + W - 1)//W
    x_end = x0
    for i in range(n):
        A = lanes_of(a, T, i*W, 0.0, desc); X = lanes_of(x, T, i*W, 0.0, desc); G = lanes_of(g, T, i*W, 0.0, desc)
        Xn = lanes_of(x, T, (i+1)*W, 0.0, desc)
        # exchange halo
        gate_first = []; x_after = []
        for l in range(L):
            gate_first.append(a_before if l == 0 else A[l-1][V-1])
            # lane l takes lane (l+1)%L's x_first; lane 0 provides x_next (own lane's next-iteration x[0])
            src = (l+1) % L
            x_after.append(Xn[0][0] if src == 0 else X[src][0])
        a_before = A[L-1][V-1]
        def step(l, j, u):
            gate = gate_first[l] if j == 0 else A[l][j-1]
            inp = G[l][j] + (dlast if (j == 0 and u == 0) else 0.0)
            return (gate, inp)
        maps = []
        for l in range(L):
            u = i*W + l*V
            m = step(l, 0, u)
            for j in range(1, V): m = then(m, step(l, j, u))
            maps.append(m)
        excl, total = warp_scan(maps)
        for l in range(L):
            u = i*W + l*V; s = apply(excl[l], carry)
            fs = T-1-u; fs = -1 if fs < 0 else (V if fs >= V else fs)
            for j in range(V):
                s = apply(step(l, j, u), s)
                xp = x_end if j >= fs else (X[l][j+1] if j+1 < V else x_after[l])
                if u + j < T:
                    t = T-1-(u+j) if desc else u+j
                    db[t] = s; da[t] = s*xp
                if j == fs: dx0 = A[l][j]*s
        carry = apply(total, carry)
    return da, db, dx0

def lookback_fw(a, b, x0, rev, U):
    # items of U iterations; carry passed sequentially (the look-back's result)
    T = len(a); x = np.full(T, np.nan); last = None
    item_steps = U*W; chunks = (T + item_steps - 1)//item_steps
    state = x0
    for c in range(chunks):
        start = c*item_steps
        scans = []; tot = (1.0, 0.0); As=[]; Bs=[]
        for k in range(U):
            A = lanes_of(a, T, start+k*W, 1.0, rev); B = lanes_of(b, T, start+k*W, 0.0, rev)
            maps=[]
            for l in range(L):
                m=(A[l][0],B[l][0])
                for j in range(1,V): m=then(m,(A[l][j],B[l][j]))
                maps.append(m)
            e,t_ = warp_scan(maps); scans.append((e,t_)); tot = then(tot, t_); As.append(A); Bs.append(B)
        carry = state
        for k in range(U):
            e,t_ = scans[k]
            for l in range(L):
                s = apply(e[l], carry); u = start+k*W+l*V; fs = T-1-u
                for j in range(V):
                    s = As[k][l][j]*s + Bs[k][l][j]
                    if u+j < T:
                        tt = T-1-(u+j) if rev else u+j
                        x[tt] = s
                    if j == fs: last = s
            carry = apply(t_, carry)
        state = apply(tot, state)
    return x, last

def lookback_bw(a, x, x0, g, dlast, rev, U):
    desc = not rev
    T = len(a); da = np.full(T, np.nan); db = np.full(T, np.nan); dx0=None
    item_steps = U*W; chunks = (T + item_steps - 1)//item_steps
    state = 0.0; x_end = x0
    def row_step(p, u):
        if 0 <= u < T: return p[T-1-u if desc else u]
        return 0.0
    for c in range(chunks):
        first = c*item_steps
        A=[lanes_of(a,T,first+k*W,0.0,desc) for k in range(U)]
        X=[lanes_of(x,T,first+k*W,0.0,desc) for k in range(U)]
        G=[lanes_of(g,T,first+k*W,0.0,desc) for k in range(U)]
        a_before = row_step(a, first-1); x_after_item = row_step(x, first+item_steps)
        hs=[]; scans=[]; tot=(1.0,0.0)
        for k in range(U):
            x_next = X[k+1][0][0] if k+1 < U else x_after_item
            gate_first=[]; x_after=[]
            for l in range(L):
                gate_first.append(a_before if l == 0 else A[k][l-1][V-1])
                src=(l+1)%L
                x_after.append(x_next if src == 0 else X[k][src][0])
            a_before = A[k][L-1][V-1]
            hs.append((gate_first, x_after))
            maps=[]
            for l in range(L):
                u = first+k*W+l*V
                def step(l,j,u,k=k,gf=gate_first):
                    gate = gf[l] if j == 0 else A[k][l][j-1]
                    return (gate, G[k][l][j] + (dlast if (j==0 and u==0) else 0.0))
                m = step(l,0,u)
                for j in range(1,V): m = then(m, step(l,j,u))
                maps.append(m)
            e,t_=warp_scan(maps); scans.append((e,t_)); tot=then(tot,t_)
        carry = state
        for k in range(U):
            e,t_=scans[k]; gate_first,x_after=hs[k]
            for l in range(L):
                u=first+k*W+l*V; s=apply(e[l],carry); fs=T-1-u; fs=-1 if fs<0 else (V if fs>=V else fs)
                for j in range(V):
                    gate = gate_first[l] if j == 0 else A[k][l][j-1]
                    s = gate*s + G[k][l][j] + (dlast if (j==0 and u==0) else 0.0)
                    xp = x_end if j >= fs else (X[k][l][j+1] if j+1 < V else x_after[l])
                    if u+j < T:
                        tt = T-1-(u+j) if desc else u+j
                        db[tt]=s; da[tt]=s*xp
                    if j == fs: dx0 = A[k][l][j]*s
            carry=apply(t_,carry)
        state=apply(tot,state)
    return da, db, dx0

rng = np.random.default_rng(0)
bad = 0
for T in [1,2,3,5,7,8,9,15,16,17,31,32,33,47,64,100]:
    for rev in [False, True]:
        a = rng.uniform(-1,1,T); b = rng.uniform(-1,1,T); g = rng.uniform(-1,1,T); x0 = rng.uniform(-1,1); dl = rng.uniform(-1,1)
        xr, lr = fw_ref(a,b,x0,rev)
        dar, dbr, dx0r = bw_ref(a, xr, x0, g, dl, rev)
        xm, lm = fw_march(a,b,x0,rev)
        dam, dbm, dx0m = bw_march(a, xr, x0, g, dl, rev)
        for U in [1,2]:
            xl, ll = lookback_fw(a,b,x0,rev,U)
            dal, dbl, dx0l = lookback_bw(a, xr, x0, g, dl, rev, U)
            ok = np.allclose(xl,xr) and np.isclose(ll,lr) and np.allclose(dal,dar) and np.allclose(dbl,dbr) and np.isclose(dx0l,dx0r)
            if not ok: bad += 1; print("lookback FAIL", T, rev, U)
        ok = np.allclose(xm,xr) and np.isclose(lm,lr) and np.allclose(dam,dar) and np.allclose(dbm,dbr) and np.isclose(dx0m,dx0r)
        if not ok: bad += 1; print("march FAIL", T, rev, np.max(np.abs(dam-dar)), np.max(np.abs(dbm-dbr)), dx0m, dx0r)
print("bad", bad)


# ---- the look-back window (warp_carry_in) ----
E, L = 4, 32


random.seed(1)
bad = 0
for trial in range(3000):
    chunk = random.randint(1, 400)
    maps = [(random.uniform(0.5,1.0), random.uniform(-1,1)) for _ in range(chunk)]  # predecessors' maps, index 0 = chunk 0
    start = random.uniform(-1,1)
    incl = []; s = start
    for m in maps: s = apply(m, s); incl.append(s)
    true_carry = incl[-1]
    # status: chunk 0 always eventually inclusive; others aggregate or inclusive; pending resolves over rounds
    status = [2 if i == 0 else random.choice([1,1,1,2]) for i in range(chunk)]
    if trial % 3 == 0:  # many items in flight: only chunk 0 inclusive (needs full windows of aggregates)
        status = [2] + [1] * (chunk - 1)
    pending_until = [random.randint(0,3) for _ in range(chunk)]
    rnd = 0
    later = (1.0, 0.0); newest = chunk - 1; remaining = chunk
    while True:
        while True:
            d = []
            for lane in range(L):
                for q in range(E):
                    e = lane*E + q
                    if e < remaining:
                        p = newest - e
                        st = status[p] if rnd >= pending_until[p] else 0
                        d.append((st, maps[p], incl[p]))
                    else:
                        d.append((0, None, None))
            fp = min([i for i,x in enumerate(d) if x[0]==0] + [2**32-1])
            fp = min(fp, L*E)  # the kernel's cap: a window with no pending entry is all usable
            fi = min([i for i,x in enumerate(d) if x[0]==2] + [2**32-1])
            rnd += 1
            assert rnd < 10000, "look-back spins forever"
            if fp > 0 or fi == 0: break
        found = fi < fp
        count = fi + 1 if found else fp
        aggs = count - 1 if found else count
        # per lane: compose its entries, oldest (highest q) first; then reduce with higher lanes older
        lane_maps = []
        for lane in range(L):
            m = (1.0, 0.0)
            for q in range(E-1, -1, -1):
                e = lane*E+q
                if e < aggs: m = then(m, d[e][1])
            lane_maps.append(m)
        w = (1.0, 0.0)
        for lane in range(L-1, -1, -1): w = then(w, lane_maps[lane])
        later = then(w, later)
        if found:
            carry = apply(later, d[fi][2]); break
        newest -= count; remaining -= count
    if abs(carry - true_carry) > 1e-9: bad += 1
print("bad", bad)
