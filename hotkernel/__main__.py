from hotkernel.cli.app import main

main()
