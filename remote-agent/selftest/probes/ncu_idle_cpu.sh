cd remote-agent
NCU=$(python3 -c "from remote_agent import profiler; print(profiler.find_tool('nvcc'))")
$NCU --nvtx --nvtx-include "regex:kr-test-.*/" --target-processes all --clock-control none --cache-control all --metrics gpu__time_duration.sum --csv --page raw python3 -c "import torch, sys; print('imported', flush=True); sys.stdin.readline()" < <(sleep 30) > /tmp/ncuout.txt 2>&1 &
sleep 8
for p in $(pgrep -f "ncu|python3 -c import torch"); do echo "$p $(cat /proc/$p/comm) $(awk '{print $14+$15}' /proc/$p/stat)"; done > /tmp/a.txt
sleep 10
for p in $(pgrep -f "ncu|python3 -c import torch"); do echo "$p $(cat /proc/$p/comm) $(awk '{print $14+$15}' /proc/$p/stat)"; done > /tmp/b.txt
echo "ticks at 8 s, then at 18 s (100 ticks = 1 CPU s):"; join /tmp/a.txt /tmp/b.txt
top -b -n 1 | head -20
cat /tmp/ncuout.txt | head
