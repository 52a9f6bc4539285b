package main

import "github.com/urfave/cli/v3"

// The help templates: what `withlock --help`, `withlock COMMAND --help` and
// `withlock help …` print. They are urfave/cli v2's, which withlock's help
// has always been, written out here whole (v3's own say "[options]" where
// v2 said "[command options]", list a parent's flags under GLOBAL OPTIONS
// and name the usage line differently), so the help stays the same text
// whatever templates a later urfave/cli ships. Each flag's line is
// flagHelp's (app.go). Commands with subcommands (scope) get the
// subcommand template, the others the command template.
func init() {
	cli.RootCommandHelpTemplate = rootHelpTemplate
	cli.CommandHelpTemplate = commandHelpTemplate
	cli.SubcommandHelpTemplate = subcommandHelpTemplate
}

const helpNameTemplate = `{{$v := offset .FullName 6}}{{wrap .FullName 3}}{{if .Usage}} - {{wrap .Usage $v}}{{end}}`

const usageTemplate = `{{if .UsageText}}{{wrap .UsageText 3}}{{else}}{{.FullName}}{{if .VisibleFlags}} [command options]{{end}}{{if .ArgsUsage}} {{.ArgsUsage}}{{end}}{{end}}`

const descriptionTemplate = `{{if .Description}}

DESCRIPTION:
   {{wrap .Description 3}}{{end}}`

const commandsTemplate = `{{if .VisibleCommands}}

COMMANDS:{{$cv := offsetCommands .VisibleCommands 5}}{{range .VisibleCommands}}
   {{$s := join .Names ", "}}{{$s}}{{$sp := subtract $cv (offset $s 3)}}{{indent $sp ""}}{{wrap .Usage $cv}}{{end}}{{end}}`

const flagsTemplate = `{{range .VisibleFlags}}
   {{wrap .String 6}}{{end}}`

const rootHelpTemplate = `NAME:
   ` + helpNameTemplate + `

USAGE:
   {{if .UsageText}}{{wrap .UsageText 3}}{{else}}{{.FullName}} {{if .VisibleFlags}}[global options]{{end}}{{if .Commands}} command [command options]{{end}}{{if .ArgsUsage}} {{.ArgsUsage}}{{end}}{{end}}{{if .Version}}{{if not .HideVersion}}

VERSION:
   {{.Version}}{{end}}{{end}}` + descriptionTemplate + commandsTemplate + `{{if .VisibleFlags}}

GLOBAL OPTIONS:` + flagsTemplate + `{{end}}
`

const commandHelpTemplate = `NAME:
   ` + helpNameTemplate + `

USAGE:
   ` + usageTemplate + descriptionTemplate + `{{if .VisibleFlags}}

OPTIONS:` + flagsTemplate + `{{end}}
`

const subcommandHelpTemplate = `NAME:
   ` + helpNameTemplate + `

USAGE:
   ` + usageTemplate + descriptionTemplate + commandsTemplate + `{{if .VisibleFlags}}

OPTIONS:` + flagsTemplate + `{{end}}
`
