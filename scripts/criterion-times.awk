# Criterion's console output → one line per bench: "<tag> <bench> <median ns>".
# Shared by scripts/bench-ab and scripts/bench-rounds; `tag` is set with -v.
# A long bench name puts "time:" on the next line, alone: the name is the line before.
$2 == "time:" || $1 == "time:" {
  name = ($1 == "time:") ? last : $1
  # "time: [low unit median unit high unit]": the median is the third field after "time:".
  value = ($1 == "time:") ? $4 : $5
  unit = ($1 == "time:") ? $5 : $6
  value += 0
  if (unit == "µs") value *= 1000; else if (unit == "ms") value *= 1e6; else if (unit == "ps") value /= 1000
  print tag, name, value
}
{ last = $1 }
