# Shared by the *_off.sh probes (sourced): a copy of this agent with one defence taken out by sed.
#   copy=$(agent_without FILE SED_EXPRESSION MARKER LOG) || exit 1
# FILE is relative to the agent's folder, run from it; MARKER is in the line the expression writes. Where it is not
# (the code moved on and the expression matched nothing), the probe stops instead of running the agent as built
# twice and calling the second run "without". The copy's remote-agent folder is printed; LOG gets the changed line.
agent_without() {
  local file=$1 expression=$2 marker=$3 log=$4 copy
  copy=$(mktemp -d) || return 1
  cp -r . "$copy/remote-agent"
  sed -i "$expression" "$copy/remote-agent/$file"
  if ! grep -n -- "$marker" "$copy/remote-agent/$file" > "$log"; then
    echo "probe: the change to $file matched nothing (was its line changed?): nothing run" | tee -a "$log" >&2
    rm -rf "$copy"
    return 1
  fi
  echo "$copy/remote-agent"
}
