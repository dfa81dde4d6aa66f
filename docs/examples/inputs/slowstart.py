import sys, time
for i in range(int(sys.argv[1])):
    time.sleep(0.05 if i < 20 else 0.005)  # the first 20 events 10x slower
    print(f"event {i}", flush=True)
