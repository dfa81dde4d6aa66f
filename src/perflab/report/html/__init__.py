"""The report's section of each study (HTML and Markdown: report/render.py lays them out), one
module per study, each a builder registered with its study's Result.from_dict (generic.py): it is
handed the typed result decoded from the stored summary, never the summary's dict. Importing this
package registers every builder."""

from perflab.report.html import (  # noqa: F401  (each module registers its builder on import)
    cores, cost, frontend, instances, micro, profile, run, score, variants,
)
