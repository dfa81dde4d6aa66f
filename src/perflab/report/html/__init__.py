"""The report's pages and sections in HTML (and Markdown: report/render.py lays a section out
either way), one module per study: each section builder is registered with its study's
Result.from_dict (report/generic.py) and handed the typed result decoded from the stored summary,
never the summary's dict. report/build.py imports the builders (which registers them); this
package imports none itself, so `perflab compare --html` loads its own page alone."""
