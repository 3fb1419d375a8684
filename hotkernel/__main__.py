from hotkernel.cli import main

main()
