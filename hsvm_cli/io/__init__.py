"""Everything that touches files: opening inputs and writing outputs, svmlight
text, the binary container every hsvm file kind uses, prediction files and
calibration grids."""
