# Where the databases' folders go, sourced by setup.sh after env.sh (and by tests/test_stack_dbdirs.py).
# PostgreSQL and MariaDB run as the postgres and mysql users, who must enter their folder: .stack/pg and
# .stack/mariadb when they can reach .stack, as before. A checkout they cannot reach (under root's home,
# mode 0700) gets the folders under $HUDI_CDC_STACK_DB_ROOT (default /var/tmp), in one folder per
# checkout named by a hash of $STACK, with .stack/pg and .stack/mariadb linking there, so that the other
# scripts, the logs (.stack/*/*.log) and the tests find them through .stack as before.

# can_enter USER DIR: whether USER can reach DIR (search permission on it and every parent).
can_enter() { su -s /bin/sh "$1" -c 'cd -- "$1"' -- sh "$2" >/dev/null 2>&1; }

db_dirs_fail() { echo "stack/setup.sh: $*" >&2; exit 1; }

# The per-checkout folder outside the checkout (root's, mode 0755), created on first use.
db_home() {
  local root=${HUDI_CDC_STACK_DB_ROOT:-/var/tmp} home
  home=$root/hudi-cdc-stack-$(printf %s "$STACK" | sha256sum | cut -c1-12)
  [ -d "$root" ] || db_dirs_fail "HUDI_CDC_STACK_DB_ROOT=$root is not a directory: set it to one the postgres and mysql users can enter"
  [ -e "$home" ] || [ -L "$home" ] || mkdir -m 0755 "$home" ||
    db_dirs_fail "cannot create $home: set HUDI_CDC_STACK_DB_ROOT to a directory root can write"
  # /var/tmp is everyone's: a folder of that name made by someone else is no place for the databases.
  if [ -L "$home" ] || [ ! -d "$home" ] || [ "$(stat -c %u "$home")" != "$(id -u)" ]; then
    db_dirs_fail "$home exists and is not a folder of $(id -un): remove it, or set HUDI_CDC_STACK_DB_ROOT elsewhere"
  fi
  chmod 0755 "$home"
  printf '%s\n' "$STACK" > "$home/checkout"  # whose folder this is, for whoever finds it
  echo "$home"
}

# place_db_dir NAME USER: make $STACK/NAME a folder USER can enter (a link to one outside, if need be).
place_db_dir() {
  local name=$1 user=$2 link=$STACK/$1 dir
  # Through a link the user need not pass .stack: its target is what it enters.
  if [ -d "$link" ] && can_enter "$user" "$(readlink -m "$link")"; then return 0; fi
  # Left by a setup that failed here, or a link whose target went (/var/tmp cleaned): kept only if it
  # holds a database.
  if [ -n "$(ls -A "$link/data" 2>/dev/null)" ]; then
    db_dirs_fail "the $user user cannot enter $(readlink -m "$link"), which holds a database: make its parents enterable (chmod o+x), or run make stack-reset to start it again"
  fi
  if [ -L "$link" ]; then rm -f "$link"; else rm -rf "$link"; fi
  if can_enter "$user" "$STACK"; then
    mkdir "$link" && chown "$user:$user" "$link"
    return 0
  fi
  dir=$(db_home)/$name || exit 1
  # No link pointed here: what is left belongs to a .stack since removed, whose data went with it.
  rm -rf "$dir" && mkdir "$dir" && chown "$user:$user" "$dir"
  can_enter "$user" "$dir" || { rm -rf "$dir"; db_dirs_fail "the $user user can enter neither $STACK nor $dir: set HUDI_CDC_STACK_DB_ROOT to a directory it can enter (default /var/tmp)"; }
  ln -s "$dir" "$link"
}

# drop_db_home: remove the per-checkout folder outside the checkout and the links to it (stack/reset.sh).
drop_db_home() {
  local name home
  for name in pg mariadb; do
    [ -L "$STACK/$name" ] || continue
    home=$(dirname "$(readlink -m "$STACK/$name")")
    # Only a folder this checkout's setup made: it names the checkout.
    if [ "$(cat "$home/checkout" 2>/dev/null)" = "$STACK" ]; then rm -rf "$home"; fi
    [ -e "$STACK/$name" ] || rm -f "$STACK/$name"
  done
}
