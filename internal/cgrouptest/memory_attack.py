# The memory cap attack: see MemoryAttack in attack.go.
import ctypes, os, time
libc = ctypes.CDLL(None, use_errno=True)
MiB = 1 << 20
def grab(limit):
    held = []
    try:
        while len(held) * 4 < limit:
            held.append(b"\x01" * (4 * MiB))
    except MemoryError:
        pass
    return held
kids, total = [], 0
for i in range(10):
    r, w = os.pipe()
    try:
        pid = os.fork()
    except OSError as e:
        print("fork refused: errno %d" % e.errno)
        os.close(r); os.close(w)
        break
    if pid == 0:
        os.close(r)
        h = grab(100)
        os.write(w, b"%d\n" % (len(h) * 4))
        os.close(w)
        time.sleep(60)
        os._exit(0)
    os.close(w)
    kids.append((pid, r))
for pid, r in kids:
    total += int(os.read(r, 32) or b"0")
memfd = 0
try:
    fd = os.memfd_create("hog")
    chunk = b"\x02" * MiB
    while memfd < 256:
        os.write(fd, chunk)
        memfd += 1
except OSError as e:
    print("memfd: errno %d" % e.errno)
shm = 0
libc.shmget.restype = ctypes.c_int
sid = libc.shmget(0, 64 * MiB, 0o1600)
if sid < 0:
    print("shmget: errno %d" % ctypes.get_errno())
else:
    libc.shmat.restype = ctypes.c_void_p
    a = libc.shmat(sid, None, 0)
    if a is None or a == ctypes.c_void_p(-1).value:
        print("shmat: errno %d" % ctypes.get_errno())
    else:
        ctypes.memset(a, 3, 64 * MiB)
        libc.shmdt(ctypes.c_void_p(a))
        shm = 64
q = libc.mq_open(b"/act-attack", 0o102, 0o600, None)
print("mq_open: %s" % ("errno %d" % ctypes.get_errno() if q < 0 else "ok"))
print("held %d MiB: %d in %d children, memfd %d, shm %d" % (total + memfd + shm, total, len(kids), memfd, shm))
for pid, r in kids:
    os.kill(pid, 9)

