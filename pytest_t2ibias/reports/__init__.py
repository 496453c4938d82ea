"""What a run tells people: report rows, the terminal table, JSON, the HTML page with its
charts, image galleries and heatmaps, and progress on stderr."""
