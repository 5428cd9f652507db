"""Sample documents shipped with dk-mirror, so it works with no network and no key."""
