"""The typed symbol index: API names (namespaces, methods, events, properties, types, classes)
found in reference pages, shared by search, the browser's type-ahead and the docset export."""
