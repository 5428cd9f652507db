"""The `docset` export: a Dash/Zeal docset of the mirrored pages, typed by the symbol index,
with a feed (and the archive it points to) so Dash and Zeal can update it."""
