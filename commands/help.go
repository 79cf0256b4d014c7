package commands

// The help of the verbs that run this package, kept beside the code it
// describes so that the two change together.

// DefineHelp is mesh module define's help: what ReadModuleFile and
// DefineModule check.
const DefineHelp = `Define (or redefine) modules from module files, all or none: every file is
read and checked before anything is written, and one refused file defines
nothing. A module file holds one module (its format is in commands.ParseModuleFile):
a second YAML document in it (after "---") is refused, naming the file and
the line it starts on, never dropped; put each module in a file of its own.
Module, container and port names are DNS labels (1 to 63 lower-case
letters, digits and '-', no '-' at either end): the refusal names the rule
a name breaks. --plan appends nothing: it shows the plan of every node the
definitions reach (mesh plan --after "module define FILE...").`
