"""`dk-mirror export FORMAT OUT`: the selected documents as files other readers open.

One machinery (run.py) serves every format: it selects the documents (source.py), hands them
to a format (base.py says what a format is; formats.py lists them), and writes what the format
yields incrementally and safely (writer.py), with the notice the licences ask for
(attribution.py). Import-free, so naming the package loads nothing.
"""
